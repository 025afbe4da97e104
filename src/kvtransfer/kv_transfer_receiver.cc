#include "kvtransfer/kv_transfer_receiver.h"

#include <sys/socket.h>

#include <atomic>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "base/log.h"

namespace pagoda::kvtransfer {

struct KvTransferReceiver::Impl {
  KvTransferReceiverOptions options;
  TransferInbox* inbox = nullptr;
  Socket listener;
  uint16_t port = 0;
  std::thread acceptor;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  struct Conn {
    Socket socket;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::list<Conn> conns;  // guarded by mu

  void Serve(Conn& c) {
    SocketReader reader(c.socket, options.idle_timeout,
                        std::chrono::steady_clock::now() + options.max_transfer_time);
    std::string id;
    const TransferAck ack = inbox->ReceiveStream(reader, &id);
    if (!ack.ok && !stopping.load()) {
      PAGODA_LOG(Warning) << "KV transfer " << (id.empty() ? "(no id)" : id) << " refused: " << ack.message;
    }
    std::vector<uint8_t> out;
    AppendAck(ack, &out);
    (void)WriteAll(c.socket, out.data(), out.size(), std::chrono::steady_clock::now() + options.idle_timeout);
    c.socket.Shutdown();
    c.done.store(true);
  }

  // Joins connections that finished (the acceptor calls it before each accept).
  void Reap() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = conns.begin(); it != conns.end();) {
      if (it->done.load()) {
        it->thread.join();
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }

  void Accept() {
    while (!stopping.load()) {
      const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (stopping.load()) break;
        if (errno == EINTR || errno == ECONNABORTED) continue;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like: back off
        continue;
      }
      Socket s(fd);
      Reap();
      std::lock_guard<std::mutex> lock(mu);
      if (stopping.load()) break;
      if (static_cast<int>(conns.size()) >= options.max_connections) {
        PAGODA_LOG(Warning) << "KV transfer: " << options.max_connections
                            << " transfers are open already; a connection was closed";
        continue;  // the socket closes here
      }
      Conn& c = conns.emplace_back();
      c.socket = std::move(s);
      c.thread = std::thread([this, &c] { Serve(c); });
    }
  }
};

KvTransferReceiver::KvTransferReceiver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<KvTransferReceiver>> KvTransferReceiver::Start(const KvTransferReceiverOptions& options,
                                                                      TransferInbox& inbox) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->inbox = &inbox;
  PAGODA_ASSIGN_OR_RETURN(impl->listener, ListenTcp(options.listen));
  impl->port = LocalPort(impl->listener);
  Impl* p = impl.get();
  impl->acceptor = std::thread([p] { p->Accept(); });
  return std::unique_ptr<KvTransferReceiver>(new KvTransferReceiver(std::move(impl)));
}

uint16_t KvTransferReceiver::port() const { return impl_->port; }

void KvTransferReceiver::Stop() {
  if (impl_->stopping.exchange(true)) return;
  impl_->listener.Shutdown();
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (Impl::Conn& c : impl_->conns) c.socket.Shutdown();
  for (Impl::Conn& c : impl_->conns) c.thread.join();
  impl_->conns.clear();
}

KvTransferReceiver::~KvTransferReceiver() { Stop(); }

}  // namespace pagoda::kvtransfer
