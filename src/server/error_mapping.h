// Error values to HTTP: ApiError -> Response, and engine Status codes to the
// OpenAI error they call for (InvalidArgument 400, ResourceExhausted 429 with
// Retry-After, FailedPrecondition 503, anything else 500; a KV page integrity failure
// is 500 with code "kv_cache_integrity").
#pragma once

#include "api/api_error.h"
#include "base/status.h"
#include "http/message.h"

namespace pagoda::server {

// Seconds a client should wait after a 429 (queue full).
inline constexpr int kRetryAfterSeconds = 1;

api::ApiError ApiErrorFromStatus(const Status& status);
// The error as an HTTP response; 429 carries Retry-After.
http::Response ErrorResponse(const api::ApiError& error);

}  // namespace pagoda::server
