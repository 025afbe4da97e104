#include "kvevents/subscriber.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "kvevents/kv_event_codec.h"
#include "kvevents/zmq_frames.h"

namespace pagoda::kvevents {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);  // how soon Stop is seen

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Status Connect(zmq::socket_t& s, const std::string& endpoint, const char* what) {
  try {
    s.connect(endpoint);
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return InvalidArgument(std::string("cannot connect to the KV events ") + what + " endpoint '" + endpoint +
                           "': " + e.what());
  }
}

}  // namespace

struct Subscriber::Impl {
  SubscriberOptions options;
  BatchCallback callback;
  zmq::context_t ctx{1};
  zmq::socket_t sub{ctx, zmq::socket_type::sub};
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> received{0}, applied{0}, malformed{0}, gaps{0}, replays{0}, resets{0};

  // Subscriber thread only.
  bool have_applied = false;
  uint64_t last_applied = 0;
  bool have_live = false;
  uint64_t last_live = 0;

  void Run();
  void OnLive(std::vector<zmq::message_t>& frames);
  // Applies the replay buffer from `start` on; false when it could not be had.
  bool Replay(uint64_t start);
  void ApplyReplayed(uint64_t seq, std::string_view payload);
  void Deliver(uint64_t seq, std::string_view payload);
  void Reset(uint64_t seq);
};

Result<std::unique_ptr<Subscriber>> Subscriber::Create(const SubscriberOptions& options, BatchCallback callback) {
  if (options.endpoint.empty()) return InvalidArgument("KV events subscriber: no endpoint");
  if (!callback) return InvalidArgument("KV events subscriber: no callback");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->callback = std::move(callback);
  impl->sub.set(zmq::sockopt::rcvhwm, 100000);
  impl->sub.set(zmq::sockopt::linger, 0);
  impl->sub.set(zmq::sockopt::subscribe, options.topic);
  PAGODA_RETURN_IF_ERROR(Connect(impl->sub, options.endpoint, "publish"));
  if (!options.replay_endpoint.empty()) {
    // Checked here so a bad address fails at start-up; Replay() uses fresh sockets.
    zmq::socket_t probe(impl->ctx, zmq::socket_type::dealer);
    probe.set(zmq::sockopt::linger, 0);
    PAGODA_RETURN_IF_ERROR(Connect(probe, options.replay_endpoint, "replay"));
  }
  return std::unique_ptr<Subscriber>(new Subscriber(std::move(impl)));
}

Subscriber::Subscriber(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Subscriber::~Subscriber() { Stop(); }

void Subscriber::Start() {
  if (impl_->thread.joinable()) return;
  impl_->stop = false;
  Impl* raw = impl_.get();
  impl_->thread = std::thread([raw] { raw->Run(); });
}

void Subscriber::Stop() {
  impl_->stop = true;
  if (impl_->thread.joinable()) impl_->thread.join();
}

SubscriberStats Subscriber::stats() const {
  SubscriberStats s;
  s.received = impl_->received.load();
  s.applied = impl_->applied.load();
  s.malformed = impl_->malformed.load();
  s.gaps = impl_->gaps.load();
  s.replays = impl_->replays.load();
  s.resets = impl_->resets.load();
  return s;
}

void Subscriber::Impl::Run() {
  if (!have_applied) Replay(0);  // late join: whatever the publisher still holds
  while (!stop.load()) {
    zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, kPollInterval) <= 0) continue;
      std::vector<zmq::message_t> frames;
      while (!stop.load() && zmq::recv_multipart(sub, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
        OnLive(frames);
        frames.clear();
      }
    } catch (const zmq::error_t&) {
      // EINTR and friends: poll again.
    }
  }
}

void Subscriber::Impl::OnLive(std::vector<zmq::message_t>& frames) {
  received.fetch_add(1, std::memory_order_relaxed);
  const auto seq = frames.size() == 3 ? internal::ParseSeq(frames[1].to_string_view()) : std::nullopt;
  if (!seq || frames[0].to_string_view() != options.topic) {
    malformed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (have_live && *seq <= last_live) {
    // One publisher's live stream only goes up: this is a new publisher.
    Reset(*seq);
    have_applied = false;
    last_live = *seq;
    Replay(0);
  }
  have_live = true;
  last_live = *seq;
  if (have_applied && *seq <= last_applied) return;  // already applied from a replay
  if (have_applied && *seq > last_applied + 1) {
    gaps.fetch_add(1, std::memory_order_relaxed);
    Replay(last_applied + 1);
    if (*seq <= last_applied) return;
    if (*seq > last_applied + 1) Reset(*seq);  // lost for good
  }
  Deliver(*seq, frames[2].to_string_view());
}

bool Subscriber::Impl::Replay(uint64_t start) {
  if (options.replay_endpoint.empty()) return false;
  replays.fetch_add(1, std::memory_order_relaxed);
  // A fresh DEALER per request: a timed-out request's late replies die with the old one.
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::rcvhwm, 0);
  try {
    dealer.connect(options.replay_endpoint);
    const std::string start_bytes = internal::SeqBytes(start);
    std::vector<zmq::const_buffer> req{zmq::const_buffer(), zmq::buffer(start_bytes)};
    if (!zmq::send_multipart(dealer, req, zmq::send_flags::dontwait)) return false;
    const auto deadline = std::chrono::steady_clock::now() + options.replay_timeout;
    std::vector<zmq::message_t> frames;
    while (!stop.load()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::min(left, kPollInterval)) <= 0) continue;
      frames.clear();
      if (!zmq::recv_multipart(dealer, std::back_inserter(frames), zmq::recv_flags::dontwait)) continue;
      size_t i = !frames.empty() && frames[0].size() == 0 ? 1 : 0;  // the empty delimiter
      const auto seq = frames.size() == i + 2 ? internal::ParseSeq(frames[i].to_string_view()) : std::nullopt;
      if (!seq) {
        malformed.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (*seq == internal::kEndSeq) return true;
      if (*seq >= start) ApplyReplayed(*seq, frames[i + 1].to_string_view());
    }
  } catch (const zmq::error_t&) {
  }
  return false;
}

void Subscriber::Impl::ApplyReplayed(uint64_t seq, std::string_view payload) {
  if (have_applied && seq <= last_applied) return;
  if (have_applied && seq > last_applied + 1) Reset(seq);  // older than the replay buffer
  Deliver(seq, payload);
}

void Subscriber::Impl::Deliver(uint64_t seq, std::string_view payload) {
  have_applied = true;
  last_applied = seq;
  Result<EventBatch> batch = DecodeBatch(payload);
  if (!batch.ok()) {
    malformed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  callback(seq, std::move(*batch));
  applied.fetch_add(1, std::memory_order_relaxed);
}

void Subscriber::Impl::Reset(uint64_t seq) {
  resets.fetch_add(1, std::memory_order_relaxed);
  EventBatch b;
  b.ts = Now();
  b.events.emplace_back(std::in_place_type<AllBlocksCleared>);
  callback(seq, std::move(b));
}

}  // namespace pagoda::kvevents
