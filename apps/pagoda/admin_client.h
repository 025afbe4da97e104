// AdminClient: blocking JSON calls to a running server's or gateway's admin
// API (src/control/admin_routes.h) for `pagoda admin`. http:// and https://
// (TLS verified against the system store or --ca-file) through
// http::UpstreamClient. The admin key goes in the Authorization header only;
// it is never printed, not even in errors.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "gateway/gateway_config.h"
#include "http/upstream_client.h"

namespace pagoda::cli {

struct AdminReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

class AdminClient {
 public:
  // `url`: http[s]://HOST[:PORT][/base]. InvalidArgument when malformed.
  static Result<std::unique_ptr<AdminClient>> Create(std::string_view url, std::string admin_key,
                                                     std::string ca_file);

  // One call; `query` values are percent-encoded here. IoError when the
  // server cannot be reached or the answer is incomplete; any HTTP status is
  // a reply (see ErrorOf).
  Result<AdminReply> Call(std::string_view method, std::string_view path,
                          const std::map<std::string, std::string>& query = {}, std::string_view body = {});

  // The server's OpenAI-style error message of a non-2xx reply
  // ("HTTP 404: No tenant 'x'."), or the start of a body that is not one.
  static std::string ErrorOf(const AdminReply& reply);

 private:
  AdminClient(gateway::Endpoint endpoint, std::string admin_key, std::string ca_file);

  gateway::Endpoint endpoint_;
  std::string admin_key_;
  std::string ca_file_;
  http::UpstreamClient client_;
};

// RFC 3986 percent-encoding of everything but unreserved characters.
std::string UrlEncode(std::string_view s);

}  // namespace pagoda::cli
