#include "api/api_error.h"

#include <nlohmann/json.hpp>

#include "api/json_text.h"

namespace pagoda::api {

namespace {

ApiError Make(int status, std::string message, std::string type, std::optional<std::string> param,
              std::optional<std::string> code) {
  return ApiError{status, std::move(message), std::move(type), std::move(param), std::move(code)};
}

ApiError Bad(std::string message, std::string_view param, const char* code) {
  std::optional<std::string> p;
  if (!param.empty()) p = std::string(param);
  return Make(400, std::move(message), "invalid_request_error", std::move(p), code);
}

}  // namespace

nlohmann::json ApiError::ToJson() const {
  nlohmann::json e = nlohmann::json::object();
  e["message"] = message;
  e["type"] = type;
  e["param"] = param ? nlohmann::json(*param) : nlohmann::json(nullptr);
  e["code"] = code ? nlohmann::json(*code) : nlohmann::json(nullptr);
  return nlohmann::json{{"error", std::move(e)}};
}

std::string ApiError::ToJsonString() const { return DumpJson(ToJson()); }

ApiError InvalidType(std::string_view param, std::string_view expected) {
  return Bad("Invalid type for '" + std::string(param) + "': expected " + std::string(expected) + ".", param,
             "invalid_type");
}

ApiError InvalidValue(std::string_view param, std::string message) {
  return Bad(std::move(message), param, "invalid_value");
}

ApiError MissingParameter(std::string_view param) {
  return Bad("Missing required parameter: '" + std::string(param) + "'.", param, "missing_required_parameter");
}

ApiError UnknownParameter(std::string_view param) {
  return Bad("Unrecognized request argument supplied: '" + std::string(param) + "'.", param, "unknown_parameter");
}

ApiError UnsupportedParameter(std::string_view param, std::string why) {
  return Bad("Unsupported parameter: '" + std::string(param) + "' " + why, param, "unsupported_parameter");
}

ApiError UnsupportedValue(std::string_view param, std::string why) {
  return Bad("Unsupported value for '" + std::string(param) + "': " + why, param, "unsupported_value");
}

ApiError InvalidJson(std::string detail) {
  return Bad("We could not parse the JSON body of your request: " + detail, "", "invalid_json");
}

ApiError InvalidUtf8(std::string_view where) {
  return Bad("Invalid UTF-8 in " + std::string(where) + ".", where == "request body" ? "" : where, "invalid_utf8");
}

ApiError ContextLengthExceeded(std::string message, std::string_view param) {
  return Bad(std::move(message), param, "context_length_exceeded");
}

ApiError ModelNotFound(std::string_view model) {
  return Make(404, "The model '" + std::string(model) + "' does not exist.", "invalid_request_error",
              std::string("model"), std::string("model_not_found"));
}

ApiError NotFoundRoute(std::string_view method, std::string_view path) {
  return Make(404, "No route for " + std::string(method) + " " + std::string(path) + ".", "invalid_request_error",
              std::nullopt, std::string("not_found"));
}

ApiError MethodNotAllowed(std::string_view method, std::string_view path) {
  return Make(405, "Method " + std::string(method) + " is not allowed on " + std::string(path) + ".",
              "invalid_request_error", std::nullopt, std::string("method_not_allowed"));
}

ApiError InvalidApiKey() {
  return Make(401, "Incorrect or missing API key. Send 'Authorization: Bearer <key>'.", "invalid_request_error",
              std::nullopt, std::string("invalid_api_key"));
}

ApiError BodyTooLarge(size_t limit_bytes) {
  return Make(413, "Request body exceeds the limit of " + std::to_string(limit_bytes) + " bytes.",
              "invalid_request_error", std::nullopt, std::string("request_too_large"));
}

ApiError Overloaded(std::string message) {
  return Make(503, std::move(message), "server_error", std::nullopt, std::string("server_overloaded"));
}

ApiError ServerError(std::string message) {
  return Make(500, std::move(message), "server_error", std::nullopt, std::nullopt);
}

}  // namespace pagoda::api
