#include "kvevents/publisher.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "base/log.h"
#include "kvevents/kv_event_codec.h"
#include "kvevents/zmq_frames.h"

namespace pagoda::kvevents {
namespace {

// How often the sender looks for batches and replay requests: the events'
// added latency and a replay request's wait, at most.
constexpr auto kSendInterval = std::chrono::milliseconds(2);
constexpr auto kFlushOnClose = std::chrono::seconds(1);

Result<std::string> Bind(zmq::socket_t& s, const std::string& endpoint, const char* what) {
  try {
    s.bind(endpoint);
    return s.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return InvalidArgument(std::string("cannot bind the KV events ") + what + " endpoint '" + endpoint +
                           "': " + e.what());
  }
}

}  // namespace

struct Publisher::Impl {
  PublisherOptions options;
  zmq::context_t ctx{1};
  zmq::socket_t pub{ctx, zmq::socket_type::pub};
  zmq::socket_t replay;  // ROUTER when replay_endpoint is set
  std::string bound_endpoint, bound_replay;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<uint64_t, EventBatch>> queue;  // at most options.max_queue
  bool stopping = false;
  uint64_t next_seq = 0;  // producer thread only

  std::deque<std::pair<uint64_t, std::string>> buffer;  // sender thread only
  std::atomic<int64_t> published{0}, dropped{0}, replayed{0}, replay_requests{0}, malformed_requests{0};
  std::thread thread;

  void Run();
  void Send(uint64_t seq, EventBatch& batch);
  void ServeReplay();
};

Result<std::unique_ptr<Publisher>> Publisher::Create(const PublisherOptions& options) {
  if (options.buffer_steps < 0 || options.max_queue < 1 || options.hwm < 0) {
    return InvalidArgument("KV events publisher: buffer_steps >= 0, max_queue >= 1 and hwm >= 0 are required");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->pub.set(zmq::sockopt::sndhwm, options.hwm);
  impl->pub.set(zmq::sockopt::linger, 100);
  PAGODA_ASSIGN_OR_RETURN(impl->bound_endpoint, Bind(impl->pub, options.endpoint, "publish"));
  if (!options.replay_endpoint.empty()) {
    impl->replay = zmq::socket_t(impl->ctx, zmq::socket_type::router);
    // A full replay is buffer_steps + 1 messages to one peer; ROUTER drops
    // silently past the high-water mark.
    impl->replay.set(zmq::sockopt::sndhwm, 2 * options.buffer_steps + 16);
    impl->replay.set(zmq::sockopt::linger, 0);
    PAGODA_ASSIGN_OR_RETURN(impl->bound_replay, Bind(impl->replay, options.replay_endpoint, "replay"));
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<Publisher>(new Publisher(std::move(impl)));
}

Publisher::Publisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Publisher::~Publisher() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_one();
  impl_->thread.join();
}

bool Publisher::Publish(EventBatch batch) {
  if (!batch.data_parallel_rank) batch.data_parallel_rank = impl_->options.data_parallel_rank;
  const uint64_t seq = impl_->next_seq++;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->queue.size() >= static_cast<size_t>(impl_->options.max_queue)) {
      impl_->dropped.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    impl_->queue.emplace_back(seq, std::move(batch));
  }
  // No wake-up: a futex wake from here lets the scheduler run the sender on
  // the engine's core inside this call (measured: 50-150 us per step on a
  // busy 2-core machine). The sender looks every kSendInterval instead.
  return true;
}

PublisherStats Publisher::stats() const {
  PublisherStats s;
  s.published = impl_->published.load();
  s.dropped = impl_->dropped.load();
  s.replayed = impl_->replayed.load();
  s.replay_requests = impl_->replay_requests.load();
  s.malformed_requests = impl_->malformed_requests.load();
  return s;
}

const std::string& Publisher::endpoint() const { return impl_->bound_endpoint; }
const std::string& Publisher::replay_endpoint() const { return impl_->bound_replay; }

void Publisher::Impl::Run() {
  std::deque<std::pair<uint64_t, EventBatch>> work;
  std::chrono::steady_clock::time_point flush_deadline{};
  for (;;) {
    bool stop = false;
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, kSendInterval, [&] { return stopping; });
      work.swap(queue);
      stop = stopping;
    }
    if (stop && flush_deadline == std::chrono::steady_clock::time_point{}) {
      flush_deadline = std::chrono::steady_clock::now() + kFlushOnClose;
    }
    for (auto& [seq, batch] : work) {
      if (stop && std::chrono::steady_clock::now() > flush_deadline) break;
      Send(seq, batch);
    }
    work.clear();
    if (replay) ServeReplay();
    if (stop) {
      std::lock_guard lock(mu);
      if (queue.empty() || std::chrono::steady_clock::now() > flush_deadline) break;
    }
  }
  pub.close();
  if (replay) replay.close();
}

void Publisher::Impl::Send(uint64_t seq, EventBatch& batch) {
  std::string payload = EncodeBatch(batch);
  try {
    // PUB never blocks: past the high-water mark ZeroMQ drops for that peer.
    pub.send(zmq::buffer(options.topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    pub.send(zmq::buffer(internal::SeqBytes(seq)), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
    published.fetch_add(1, std::memory_order_relaxed);
  } catch (const zmq::error_t& e) {
    PAGODA_LOG(Warning) << "KV events: sending batch " << seq << " failed: " << e.what();
  }
  if (options.buffer_steps == 0) return;
  if (buffer.size() >= static_cast<size_t>(options.buffer_steps)) buffer.pop_front();
  buffer.emplace_back(seq, std::move(payload));
}

void Publisher::Impl::ServeReplay() {
  for (;;) {
    std::vector<zmq::message_t> req;
    try {
      if (!zmq::recv_multipart(replay, std::back_inserter(req), zmq::recv_flags::dontwait)) return;
    } catch (const zmq::error_t&) {
      return;
    }
    // [identity, "", start] from REQ (vLLM's subscribers); [identity, start] from a bare DEALER.
    const bool delimited = req.size() == 3 && req[1].size() == 0;
    const auto start = req.size() >= 2 ? internal::ParseSeq(req.back().to_string_view()) : std::nullopt;
    if (!start || (req.size() != 2 && !delimited)) {
      malformed_requests.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    replay_requests.fetch_add(1, std::memory_order_relaxed);
    const std::string id = req[0].to_string();
    auto reply = [&](const std::string& seq, std::string_view payload) {
      std::vector<zmq::const_buffer> frames{zmq::buffer(id)};
      if (delimited) frames.push_back(zmq::const_buffer());
      frames.push_back(zmq::buffer(seq));
      frames.push_back(zmq::buffer(payload));
      try {
        zmq::send_multipart(replay, frames, zmq::send_flags::dontwait);
      } catch (const zmq::error_t&) {
        // The peer went away or is past its high-water mark: it times out and asks again.
      }
    };
    for (const auto& [seq, payload] : buffer) {
      if (seq < *start) continue;
      reply(internal::SeqBytes(seq), payload);
      replayed.fetch_add(1, std::memory_order_relaxed);
    }
    reply(internal::SeqBytes(internal::kEndSeq), {});
  }
}

}  // namespace pagoda::kvevents
