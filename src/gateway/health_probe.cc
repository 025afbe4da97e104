#include "gateway/health_probe.h"

#include <memory>

namespace pagoda::gateway {

http::UpstreamRequest ReplicaGet(const Replica& replica, const std::string& path, std::chrono::milliseconds timeout) {
  http::UpstreamRequest req;
  req.host = replica.config().endpoint.host;
  req.port = replica.config().endpoint.port;
  req.tls = replica.config().endpoint.scheme == "https";
  req.ca_file = replica.config().ca_file;
  req.method = "GET";
  req.target = replica.config().endpoint.base_path + path;
  req.connect_timeout = timeout;
  req.first_byte_timeout = timeout;
  req.idle_timeout = timeout;
  req.deadline = std::chrono::steady_clock::now() + timeout;
  return req;
}

void ProbeHealth(http::UpstreamClient& client, const Replica& replica, std::chrono::milliseconds timeout,
                 std::function<void(bool ok, const std::string& why)> done) {
  http::UpstreamRequest req = ReplicaGet(replica, "/health", timeout);
  auto status = std::make_shared<int>(0);
  http::UpstreamEvents ev;
  ev.on_head = [status](const http::UpstreamResponseHead& h) { *status = h.status; };
  ev.on_done = [status, done = std::move(done)](const http::UpstreamOutcome& o) {
    if (o.error == http::UpstreamError::kCancelled) return;
    if (o.error != http::UpstreamError::kNone) return done(false, o.message);
    if (*status != 200) return done(false, "status " + std::to_string(*status));
    done(true, "");
  };
  client.Start(std::move(req), std::move(ev));
}

}  // namespace pagoda::gateway
