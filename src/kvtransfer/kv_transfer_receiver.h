// KvTransferReceiver: a decode replica's listener for prefill replicas' KV
// transfers (`pagoda serve --kv-transfer-listen HOST:PORT`). One thread
// accepts; each connection is one transfer, read on a thread of its own
// (at most max_connections at once; more are closed at once) through a
// TransferInbox into the engine's memory tier, then acknowledged. A stream
// that stalls longer than idle_timeout, or runs past max_transfer_time, is
// dropped; Stop (and the destructor) closes the listener and every open
// connection and joins.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "kvtransfer/socket_io.h"
#include "kvtransfer/transfer_inbox.h"

namespace pagoda::kvtransfer {

struct KvTransferReceiverOptions {
  HostPort listen;  // port 0: any free port (tests)
  int max_connections = 16;
  std::chrono::milliseconds idle_timeout{10'000};
  // The most one transfer may take, however it trickles (a peer sending a
  // byte just inside every idle_timeout does not hold a slot forever).
  std::chrono::milliseconds max_transfer_time{300'000};
};

class KvTransferReceiver {
 public:
  // Listens and starts accepting. `inbox` must outlive the receiver.
  static Result<std::unique_ptr<KvTransferReceiver>> Start(const KvTransferReceiverOptions& options,
                                                            TransferInbox& inbox);
  ~KvTransferReceiver();
  KvTransferReceiver(const KvTransferReceiver&) = delete;
  KvTransferReceiver& operator=(const KvTransferReceiver&) = delete;

  uint16_t port() const;
  void Stop();

 private:
  struct Impl;
  explicit KvTransferReceiver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kvtransfer
