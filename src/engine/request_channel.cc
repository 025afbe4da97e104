#include "engine/request_channel.h"

#include <utility>

namespace pagoda {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kEog: return "eog";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "?";
}

RequestChannel::RequestChannel(std::string id, int32_t n_sequences)
    : id_(std::move(id)),
      n_open_(n_sequences),
      n_sequences_(n_sequences),
      seq_cancelled_(new std::atomic<bool>[static_cast<size_t>(n_sequences > 0 ? n_sequences : 0)]()) {}

void RequestChannel::CancelSequence(int32_t index) {
  if (index >= 0 && index < n_sequences_) seq_cancelled_[index].store(true, std::memory_order_relaxed);
}

bool RequestChannel::cancelled(int32_t index) const {
  if (cancelled()) return true;
  return index >= 0 && index < n_sequences_ && seq_cancelled_[index].load(std::memory_order_relaxed);
}

std::optional<EngineEvent> RequestChannel::Pop() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !events_.empty() || n_open_ == 0; });
  if (events_.empty()) return std::nullopt;
  EngineEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

std::optional<EngineEvent> RequestChannel::TryPop() {
  std::lock_guard lock(mu_);
  if (events_.empty()) return std::nullopt;
  EngineEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

bool RequestChannel::done() const {
  std::lock_guard lock(mu_);
  return n_open_ == 0 && events_.empty();
}

void RequestChannel::SetNotify(std::function<void()> notify) {
  std::function<void()> now;
  {
    std::lock_guard lock(mu_);
    notify_ = std::move(notify);
    if (!events_.empty() || n_open_ == 0) now = notify_;
  }
  if (now) now();
}

void RequestChannel::Push(EngineEvent event) {
  std::function<void()> notify;
  {
    std::lock_guard lock(mu_);
    PAGODA_CHECK(n_open_ > 0) << "event after the last final event of request " << id_;
    if (event.is_final()) --n_open_;
    events_.push_back(std::move(event));
    notify = notify_;
  }
  cv_.notify_all();
  if (notify) notify();
}

}  // namespace pagoda
