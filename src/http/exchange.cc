#include "http/exchange.h"

#include <algorithm>

namespace pagoda::http::internal {
namespace {

// A written chunk's buffer kept for reuse only up to this size (a slow
// client's backlog must not stay allocated for the rest of its stream).
constexpr size_t kMaxSpareBytes = size_t{256} << 10;

class WriterImpl final : public ResponseWriter {
 public:
  explicit WriterImpl(std::shared_ptr<Exchange> ex) : ex_(std::move(ex)) {}
  ~WriterImpl() override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->phase == Exchange::Phase::kNone || ex_->phase == Exchange::Phase::kStreaming) ex_->abandoned = true;
    }
    ex_->Wake();
  }

  bool Respond(Response response) override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->phase != Exchange::Phase::kNone || ex_->cancelled) return false;
      ex_->phase = Exchange::Phase::kFull;
      ex_->Push(OutItem{OutItem::Kind::kFull, std::move(response), {}, {}});
    }
    ex_->Wake();
    return true;
  }

  bool BeginSse(Headers extra) override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->cancelled) return false;
      if (ex_->phase != Exchange::Phase::kNone) return ex_->phase == Exchange::Phase::kStreaming;
      ex_->phase = Exchange::Phase::kStreaming;
      ex_->Push(OutItem{OutItem::Kind::kSseBegin, {}, std::move(extra), {}});
    }
    ex_->Wake();
    return true;
  }

  bool SendSse(std::string_view data) override { return QueueEvents(FormatSseEvent(data)); }

  bool SendSseEvents(std::string_view events) override { return QueueEvents(events); }

  void EndSse() override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->phase == Exchange::Phase::kNone) {
        ex_->Push(OutItem{OutItem::Kind::kSseBegin, {}, {}, {}});
        ex_->phase = Exchange::Phase::kStreaming;
      }
      if (ex_->phase != Exchange::Phase::kStreaming) return;
      ex_->phase = Exchange::Phase::kEnded;
      ex_->Push(OutItem{OutItem::Kind::kSseEnd, {}, {}, {}});
    }
    ex_->Wake();
  }

  void OnCancel(std::function<void()> callback) override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (!ex_->cancelled) {
        ex_->on_cancel = std::move(callback);
        return;
      }
    }
    if (callback) callback();
  }

  bool cancelled() const override { return ex_->cancelled.load(); }

  size_t queued_bytes() const override { return ex_->queued_bytes.load(std::memory_order_relaxed); }

 private:
  bool QueueEvents(std::string_view events) {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->cancelled) return false;
      if (ex_->phase == Exchange::Phase::kNone) {
        ex_->phase = Exchange::Phase::kStreaming;
        ex_->Push(OutItem{OutItem::Kind::kSseBegin, {}, {}, {}});
      }
      if (ex_->phase != Exchange::Phase::kStreaming) return false;
      ex_->PushSse(events);
      // One wake-up per batch: until the session takes the queue, later
      // events ride along with this one's.
      if (ex_->wake_pending) return true;
      ex_->wake_pending = true;
    }
    ex_->Wake();
    return true;
  }

  std::shared_ptr<Exchange> ex_;
};

}  // namespace

std::string FormatSseEvent(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 8);
  size_t start = 0;
  for (;;) {
    const size_t nl = data.find('\n', start);
    out += "data: ";
    out.append(data.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    out += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out += '\n';
  return out;
}

Exchange::~Exchange() {
  if (server_queued) *server_queued -= static_cast<int64_t>(queued_bytes.load());
}

void Exchange::Push(OutItem item) {
  const size_t n = item.data.size() + item.response.body.size();
  queued_bytes.store(queued_bytes.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  if (server_queued) *server_queued += static_cast<int64_t>(n);
  queue.push_back(std::move(item));
}

void Exchange::PushSse(std::string_view bytes) {
  if (queue.empty() || queue.back().kind != OutItem::Kind::kSseData) {
    OutItem item{OutItem::Kind::kSseData, {}, {}, std::move(spare)};
    spare = {};
    item.data.clear();
    queue.push_back(std::move(item));
  }
  queue.back().data.append(bytes);
  queued_bytes.store(queued_bytes.load(std::memory_order_relaxed) + bytes.size(), std::memory_order_relaxed);
  if (server_queued) *server_queued += static_cast<int64_t>(bytes.size());
}

void Exchange::Written(size_t n, std::string* chunk) {
  const size_t queued = queued_bytes.load(std::memory_order_relaxed);
  n = std::min(n, queued);
  queued_bytes.store(queued - n, std::memory_order_relaxed);
  if (server_queued) *server_queued -= static_cast<int64_t>(n);
  // Keep the larger buffer (a stream's chunks are alike in size), within reason.
  if (chunk != nullptr && chunk->capacity() > spare.capacity() && chunk->capacity() <= kMaxSpareBytes) {
    chunk->clear();
    spare.swap(*chunk);
  }
}

void Exchange::Wake() {
  std::lock_guard<std::mutex> lock(liveness->mu);
  if (!liveness->alive) return;
  if (auto s = session.lock()) s->Notify();
}

void Exchange::Cancel() {
  if (complete.load()) return;
  std::function<void()> cb;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (cancelled.exchange(true)) return;
    cb = std::move(on_cancel);
    on_cancel = nullptr;
  }
  if (cb) cb();
}

std::shared_ptr<ResponseWriter> MakeResponseWriter(std::shared_ptr<Exchange> ex) {
  return std::make_shared<WriterImpl>(std::move(ex));
}

}  // namespace pagoda::http::internal
