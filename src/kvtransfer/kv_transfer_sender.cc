#include "kvtransfer/kv_transfer_sender.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "kv/kv_tier.h"

namespace pagoda::kvtransfer {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

struct KvTransferSender::Impl {
  KvTransferSenderOptions options;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<uint8_t>> queue;  // encoded records
  std::vector<std::vector<uint8_t>> spare;  // sent buffers, reused (already faulted in)
  int64_t queued_bytes = 0;
  bool finishing = false;
  bool abandoned = false;  // the owner went away before finishing
  bool overflow = false;   // OnBlock found the queue full
  bool failed = false;  // the thread gave up: OnBlock drops
  bool done = false;     // the thread is through: `result` is final
  std::function<void(const KvTransferResult&)> on_done;
  KvTransferResult result;
  std::thread thread;
  Clock::time_point start;

  void Run() {
    Status st = Stream();
    std::function<void(const KvTransferResult&)> callback;
    KvTransferResult r;
    {
      std::lock_guard<std::mutex> lock(mu);
      result.status = st;
      result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      failed = !st.ok();
      queue.clear();
      queued_bytes = 0;
      done = true;
      callback = std::move(on_done);
      r = result;
    }
    cv.notify_all();
    if (callback) callback(r);
  }

  Status Stream() {
    PAGODA_ASSIGN_OR_RETURN(Socket s, ConnectTcp(options.to, options.timeout));
    // A receiver that refuses the stream acknowledges at once and stops
    // reading (then closes): a write then waits with the acknowledgement
    // readable, or fails (EPIPE / ECONNRESET) with it still queued. Either
    // way the acknowledgement says why.
    auto write = [&](const void* p, size_t n) -> Status {
      bool peer_spoke = false;
      const Status st = WriteAll(s, p, n, Clock::now() + options.timeout, &peer_spoke);
      if (st.ok() || (st.code() == StatusCode::kDeadlineExceeded && !peer_spoke)) return st;
      const auto grace = std::chrono::milliseconds(100);
      SocketReader reader(s, grace, Clock::now() + grace);
      Result<TransferAck> ack = ReadAck(reader);
      if (!ack.ok() || ack->ok) return st;
      {
        std::lock_guard<std::mutex> lock(mu);
        result.kept = ack->kept;
      }
      return FailedPrecondition("KV transfer refused by the decode replica: " + ack->message);
    };
    std::vector<uint8_t> head;
    AppendStreamHeader(options.transfer_id, &head);
    PAGODA_RETURN_IF_ERROR(write(head.data(), head.size()));
    uint32_t sent = 0;
    for (;;) {
      std::vector<uint8_t> rec;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return !queue.empty() || finishing || abandoned || overflow; });
        if (overflow) return ResourceExhausted("KV transfer: the decode replica did not keep up; blocks were dropped");
        if (abandoned) return FailedPrecondition("KV transfer abandoned");
        if (queue.empty()) break;  // finishing, all sent
        rec = std::move(queue.front());
        queue.pop_front();
        queued_bytes -= static_cast<int64_t>(rec.size());
      }
      head.clear();
      AppendBlockFrameHeader(static_cast<uint32_t>(rec.size()), &head);
      PAGODA_RETURN_IF_ERROR(write(head.data(), head.size()));
      PAGODA_RETURN_IF_ERROR(write(rec.data(), rec.size()));
      ++sent;
      {
        std::lock_guard<std::mutex> lock(mu);
        result.blocks += 1;
        result.bytes += static_cast<int64_t>(rec.size());
        if (spare.size() < 8) spare.push_back(std::move(rec));
      }
    }
    head.clear();
    AppendEndFrame(sent, &head);
    PAGODA_RETURN_IF_ERROR(write(head.data(), head.size()));
    SocketReader reader(s, options.timeout, Clock::now() + options.timeout);
    PAGODA_ASSIGN_OR_RETURN(const TransferAck ack, ReadAck(reader));
    {
      std::lock_guard<std::mutex> lock(mu);
      result.kept = ack.kept;
    }
    if (!ack.ok) return FailedPrecondition("KV transfer refused by the decode replica: " + ack.message);
    return Status::Ok();
  }
};

KvTransferSender::KvTransferSender(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::shared_ptr<KvTransferSender>> KvTransferSender::Start(const KvTransferSenderOptions& options) {
  if (!ValidTransferId(options.transfer_id)) {
    return InvalidArgument("KV transfer: transfer_id must be 1-128 characters of [A-Za-z0-9._-]");
  }
  if (!kv::TierLayoutValid(options.layout)) return InvalidArgument("KV transfer: invalid block layout");
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  impl->start = Clock::now();
  impl->thread = std::thread([p = impl] { p->Run(); });
  return std::shared_ptr<KvTransferSender>(new KvTransferSender(std::move(impl)));
}

void KvTransferSender::OnBlock(const kv::BlockHash& hash, const kv::BlockHash& parent,
                               std::span<const int32_t> tokens, const void* payload) {
  std::vector<uint8_t> rec;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->failed || impl_->finishing || impl_->abandoned || impl_->overflow) return;
    if (impl_->queued_bytes + impl_->options.layout.RecordBytes() > impl_->options.max_queued_bytes) {
      impl_->overflow = true;  // the peer cannot keep up: stop rather than hold memory
      impl_->cv.notify_all();
      return;
    }
    if (!impl_->spare.empty()) {
      rec = std::move(impl_->spare.back());
      impl_->spare.pop_back();
    }
  }
  rec.clear();
  kv::EncodeBlock(impl_->options.layout, hash, parent, tokens, payload, &rec);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->queued_bytes += static_cast<int64_t>(rec.size());
  impl_->queue.push_back(std::move(rec));
  impl_->cv.notify_all();
}

KvTransferResult KvTransferSender::Finish() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->finishing = true;
    impl_->cv.notify_all();
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->result;
}

void KvTransferSender::FinishAsync(std::function<void(const KvTransferResult&)> done) {
  KvTransferResult r;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->finishing = true;
    impl_->cv.notify_all();
    if (!impl_->done) {
      impl_->on_done = std::move(done);
      return;
    }
    r = impl_->result;
  }
  done(r);
}

KvTransferSender::~KvTransferSender() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->finishing) impl_->abandoned = true;
    impl_->cv.notify_all();
  }
  // The thread holds the state it needs; it ends within the timeout.
  if (impl_->thread.joinable()) impl_->thread.detach();
}

}  // namespace pagoda::kvtransfer
