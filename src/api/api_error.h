// ApiError: an OpenAI-style error ({"error": {"message", "type", "param",
// "code"}}) plus the HTTP status it calls for, as a value. Request parsing and
// validation return ApiResult<T> (a T or an ApiError); nothing here throws.
// The HTTP status is a suggestion carried with the error: src/server and
// src/gateway are the layers that put it on the wire.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <nlohmann/json_fwd.hpp>

#include "base/check.h"

namespace pagoda::api {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::optional<std::string> param;  // null on the wire when absent
  std::optional<std::string> code;   // null on the wire when absent

  // {"error": {"message", "type", "param", "code"}}
  nlohmann::json ToJson() const;
  // ToJson() as compact text.
  std::string ToJsonString() const;
};

// Builders for the error classes the API uses. `param` is the JSON path of the
// offending field ("messages[2].role", "stop[1]").
ApiError InvalidType(std::string_view param, std::string_view expected);   // 400 invalid_type
ApiError InvalidValue(std::string_view param, std::string message);        // 400 invalid_value
ApiError MissingParameter(std::string_view param);                         // 400 missing_required_parameter
ApiError UnknownParameter(std::string_view param);                         // 400 unknown_parameter
ApiError UnsupportedParameter(std::string_view param, std::string why);    // 400 unsupported_parameter
ApiError UnsupportedValue(std::string_view param, std::string why);        // 400 unsupported_value
ApiError InvalidJson(std::string detail);                                  // 400 invalid_json
ApiError InvalidUtf8(std::string_view where);                              // 400 invalid_utf8
ApiError ContextLengthExceeded(std::string message, std::string_view param);  // 400 context_length_exceeded
ApiError ModelNotFound(std::string_view model);                            // 404 model_not_found
ApiError NotFoundRoute(std::string_view method, std::string_view path);    // 404 not_found
ApiError MethodNotAllowed(std::string_view method, std::string_view path); // 405 method_not_allowed
ApiError InvalidApiKey();                                                  // 401 invalid_api_key
ApiError BodyTooLarge(size_t limit_bytes);                                 // 413 request_too_large
ApiError Overloaded(std::string message);                                  // 503 server_overloaded
ApiError ServerError(std::string message);                                 // 500 server_error

// A T or an ApiError.
template <class T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const ApiError& error() const {
    PAGODA_CHECK(!ok()) << "error() on an ok ApiResult";
    return std::get<ApiError>(v_);
  }
  T& value() & { PAGODA_CHECK(ok()) << error().message; return std::get<T>(v_); }
  const T& value() const& { PAGODA_CHECK(ok()) << error().message; return std::get<T>(v_); }
  T&& value() && { PAGODA_CHECK(ok()) << error().message; return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace pagoda::api
