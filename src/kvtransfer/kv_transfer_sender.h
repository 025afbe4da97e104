// KvTransferSender: a prefill replica's side of one KV transfer. It is the
// request's kv::BlockSink: the engine hands it each prompt block as the
// step that finished it commits, OnBlock encodes the block record into a
// queue, and a thread of the sender's own connects to the decode replica
// and streams the queue as it fills, so the transfer overlaps the rest of
// the prefill. Finish sends the end frame and waits for the receiver's
// acknowledgement. Any failure (connect, a stall past the timeout, a
// refused stream) ends the transfer; the blocks after it are dropped, and
// the decode replica computes what it did not get.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "kv/block_file.h"
#include "kv/block_sink.h"
#include "kvtransfer/socket_io.h"

namespace pagoda::kvtransfer {

struct KvTransferResult {
  Status status;         // Ok: acknowledged
  int64_t blocks = 0;    // block records sent
  int64_t kept = 0;      // of which the receiver kept (its acknowledgement)
  int64_t bytes = 0;     // record bytes sent
  double seconds = 0;    // connect to acknowledgement
};

struct KvTransferSenderOptions {
  HostPort to;
  std::string transfer_id;  // ValidTransferId
  kv::BlockLayout layout;   // the records' (the engine's blocks, the writer's fingerprint)
  // Connecting, and any one wait for the peer while streaming and for the
  // acknowledgement.
  std::chrono::milliseconds timeout{10'000};
  int64_t max_queued_bytes = int64_t{1} << 30;  // past it blocks are dropped and the transfer fails
};

class KvTransferSender final : public kv::BlockSink {
 public:
  // Starts the sender thread (it connects at once). InvalidArgument for a
  // bad id or layout.
  static Result<std::shared_ptr<KvTransferSender>> Start(const KvTransferSenderOptions& options);
  ~KvTransferSender() override;  // abandons a transfer not finishing; never waits
  KvTransferSender(const KvTransferSender&) = delete;
  KvTransferSender& operator=(const KvTransferSender&) = delete;

  void OnBlock(const kv::BlockHash& hash, const kv::BlockHash& parent, std::span<const int32_t> tokens,
               const void* payload) override;
  // Sends what is queued and the end frame, waits for the acknowledgement,
  // joins the thread. Call once, and not with FinishAsync.
  KvTransferResult Finish();
  // The same without waiting: `done` runs on the sender's thread once the
  // acknowledgement came or the transfer failed (at once, on the caller's
  // thread, if it already had). Call once.
  void FinishAsync(std::function<void(const KvTransferResult&)> done);

 private:
  struct Impl;
  explicit KvTransferSender(std::shared_ptr<Impl> impl);
  // Shared with the thread, which may outlive this object (destroyed with a
  // FinishAsync pending: the thread finishes on its own, bounded by the timeout).
  std::shared_ptr<Impl> impl_;
};

}  // namespace pagoda::kvtransfer
