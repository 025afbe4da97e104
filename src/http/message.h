// Request and Response: plain values that cross between the HTTP server and
// its handlers (no Boost types). Header names compare case-insensitively.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagoda::http {

class Headers {
 public:
  void Add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }
  // Replaces every field named `name` with one.
  void Set(std::string_view name, std::string value);
  // The first field named `name` (case-insensitive), or nullptr.
  const std::string* Find(std::string_view name) const;
  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: "/v1/models?x=1"
  std::string path;    // target without the query: "/v1/models"
  std::string query;   // after '?', undecoded
  Headers headers;
  std::string body;
  std::string remote_address;  // "127.0.0.1:54321"
  uint64_t connection_id = 0;  // the same for requests on one keep-alive connection
  bool secure = false;         // the connection is TLS (https)
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  Headers headers;  // extra fields
  std::string body;

  static Response Json(int status, std::string body);
  static Response Text(int status, std::string body);
};

// {"error": {"message", "type", "param": null, "code"}}, the OpenAI error
// shape, for the errors the transport itself produces (400 malformed, 404,
// 405, 413, 431, 503 draining, 500 handler failure). `type` follows the
// status: invalid_request_error for 4xx, server_error for 5xx.
Response ErrorResponse(int status, std::string_view message, std::string_view code);

// JSON string literal (with quotes) of `s`; bytes that are not valid UTF-8
// become U+FFFD.
std::string JsonQuote(std::string_view s);

}  // namespace pagoda::http
