#include "server/error_mapping.h"

#include <string>

#include "kv/integrity_tracker.h"

namespace pagoda::server {

api::ApiError ApiErrorFromStatus(const Status& status) {
  api::ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      e.status = 400;
      e.code = "invalid_value";
      break;
    case StatusCode::kResourceExhausted:
      e.status = 429;
      e.type = "rate_limit_error";
      e.code = "server_overloaded";
      break;
    case StatusCode::kDeadlineExceeded:
      e.status = 504;
      e.type = "server_error";
      e.code = "request_timeout";
      break;
    case StatusCode::kFailedPrecondition:
      e.status = 503;
      e.type = "server_error";
      e.code = "shutting_down";
      break;
    default:
      e.status = 500;
      e.type = "server_error";
      // A sequence stopped by the KV page integrity check (kv/integrity_tracker.h).
      if (kv::IsIntegrityError(status)) e.code = "kv_cache_integrity";
      break;
  }
  return e;
}

http::Response ErrorResponse(const api::ApiError& error) {
  http::Response r = http::Response::Json(error.status, error.ToJsonString());
  if (error.status == 429) r.headers.Set("Retry-After", std::to_string(kRetryAfterSeconds));
  return r;
}

}  // namespace pagoda::server
