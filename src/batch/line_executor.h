// LineExecutor: how a batch line is answered. The runner hands it the line's
// request (method, url, body) and the owner it runs as; the answer comes
// back through `done`, on any thread, exactly once.
//
// RouterLineExecutor (the one both `pagoda serve` and `pagoda gateway` use)
// sends the line through the process's own HTTP router in memory, with no
// socket: the same handlers, admission, limits, routing and metering as a
// request from the network. The host decorates each request with the
// credentials it runs under (decorate), e.g. the control plane's internal
// token on behalf of the batch's key and the batch service tier.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "http/message.h"
#include "http/router.h"

namespace pagoda::batch {

struct LineCall {
  std::string tenant_id;
  std::string key_id;
  std::string request_id;  // the line's "batch_req_..." id
  std::string url;         // the batch's endpoint
  std::string body;        // JSON
};

// status 0: the request never got an answer (the server is stopping); the
// runner retries it later and commits nothing.
struct LineAnswer {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header of a 429 / 503, if any
};

class LineExecutor {
 public:
  virtual ~LineExecutor() = default;
  virtual void Execute(const LineCall& call, std::function<void(LineAnswer)> done) = 0;
};

class RouterLineExecutor final : public LineExecutor {
 public:
  using Decorate = std::function<void(const LineCall&, http::Request&)>;
  // `router` is a copy of the process's routes (read-only, like the server's).
  RouterLineExecutor(std::shared_ptr<const http::Router> router, Decorate decorate);
  void Execute(const LineCall& call, std::function<void(LineAnswer)> done) override;

 private:
  std::shared_ptr<const http::Router> router_;
  Decorate decorate_;
};

}  // namespace pagoda::batch
