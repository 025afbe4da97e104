// Client: a minimal blocking HTTP/1.1 client over one keep-alive connection
// (tests, the gateway's health checks, e2e tools). Not thread-safe: one
// caller at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "http/message.h"

namespace pagoda::http {

struct ClientResponse {
  int status = 0;
  Headers headers;
  std::string body;
  bool keep_alive = false;
};

class Client {
 public:
  Client(std::string host, uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends one request on the open connection (connecting first when needed,
  // and reconnecting once when the server closed an idle connection).
  Result<ClientResponse> Send(std::string_view method, std::string_view target, std::string_view body = {},
                              const Headers& headers = {});

  // Sends a request and reads a text/event-stream response: `on_event`
  // receives each event's data (data: lines joined with '\n') as it arrives;
  // returning false stops reading and closes the connection. The returned
  // ClientResponse has the status and headers (body: a non-SSE response's body).
  Result<ClientResponse> SendSse(std::string_view method, std::string_view target, std::string_view body,
                                 const std::function<bool(std::string_view data)>& on_event,
                                 const Headers& headers = {});

  void Close();
  bool connected() const;
  uint64_t connects() const;  // connections opened so far (keep-alive checks)

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::http
