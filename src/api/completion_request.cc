#include "api/completion_request.h"
#include "api/tools.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "api/json_fields.h"
#include "api/json_text.h"

namespace pagoda::api {

using nlohmann::json;
using internal::MaybeError;
using internal::Path;

namespace internal {

std::optional<ApiError> ReadTokenIds(const json& v, const std::string& param, std::vector<int32_t>* out) {
  if (!v.is_array()) return InvalidType(param, "an array of token ids");
  if (v.empty()) {
    ApiError e = InvalidValue(param, "Invalid '" + param + "': empty array. Expected at least one token id.");
    e.code = "empty_array";
    return e;
  }
  out->reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t id;
    if (auto e = ReadInt(v[i], Path(param, i), 0, std::numeric_limits<int32_t>::max(), &id)) return e;
    out->push_back(static_cast<int32_t>(id));
  }
  return std::nullopt;
}

MaybeError ReadPromptList(const json& v, const std::string& param, int max_prompts, bool allow_empty_text,
                          std::vector<CompletionPrompt>* out) {
  constexpr const char* kExpected = "a string, an array of strings, an array of token ids, or an array of such arrays";
  auto read_text = [&](const json& x, const std::string& at, CompletionPrompt* p) -> MaybeError {
    if (auto e = ReadString(x, at, &p->text)) return e;
    if (!allow_empty_text && p->text.empty()) return InvalidValue(at, "Invalid '" + at + "': empty string.");
    return std::nullopt;
  };
  if (v.is_string()) {
    CompletionPrompt p;
    if (auto e = read_text(v, param, &p)) return e;
    out->push_back(std::move(p));
    return std::nullopt;
  }
  if (!v.is_array()) return InvalidType(param, kExpected);
  if (v.empty()) {
    ApiError e = InvalidValue(param, "Invalid '" + param + "': empty array.");
    e.code = "empty_array";
    return e;
  }
  if (v[0].is_number()) {  // one prompt as token ids
    CompletionPrompt p;
    p.is_tokens = true;
    if (auto e = ReadTokenIds(v, param, &p.tokens)) return e;
    out->push_back(std::move(p));
    return std::nullopt;
  }
  if (v.size() > static_cast<size_t>(max_prompts)) {
    return InvalidValue(param, "Invalid '" + param + "': at most " + std::to_string(max_prompts) + " per request, got " +
                                   std::to_string(v.size()) + ".");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = Path(param, i);
    CompletionPrompt p;
    if (v[i].is_string()) {
      if (auto e = read_text(v[i], at, &p)) return e;
    } else if (v[i].is_array()) {
      p.is_tokens = true;
      if (auto e = ReadTokenIds(v[i], at, &p.tokens)) return e;
    } else {
      return InvalidType(at, "a string or an array of token ids");
    }
    out->push_back(std::move(p));
  }
  return std::nullopt;
}

}  // namespace internal

namespace {

MaybeError ReadPrompt(const json& v, std::vector<CompletionPrompt>* out) {
  return internal::ReadPromptList(v, "prompt", kMaxPromptsPerRequest, /*allow_empty_text=*/true, out);
}

}  // namespace

ApiResult<CompletionRequest> ParseCompletionRequest(std::string_view body, const RequestLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  auto req = ParseCompletionJson(parsed.value(), limits);
  if (req.ok()) {
    std::vector<ToolFunction> no_tools;
    internal::RestoreSchemaKeyOrder(body, &req.value().options.structured.response_format, &no_tools);
  }
  return req;
}

ApiResult<CompletionRequest> ParseCompletionJson(const json& body, const RequestLimits& limits) {
  if (!body.is_object()) return InvalidJson("the top level must be a JSON object.");
  CompletionRequest req;
  bool have_prompt = false;
  std::optional<int64_t> best_of;
  for (const auto& [key, value] : body.items()) {
    std::optional<ApiError> error;
    if (internal::ReadGenerationField(key, value, limits, &req.options, &error) ==
        internal::FieldOutcome::kHandled) {
      if (error) return *error;
      continue;
    }
    if (key == "prompt") {
      if (value.is_null()) continue;  // reported as missing below
      if (auto e = ReadPrompt(value, &req.prompts)) return *e;
      have_prompt = true;
    } else if (key == "echo") {
      if (value.is_null()) continue;
      if (auto e = internal::ReadBool(value, key, &req.echo)) return *e;
    } else if (key == "logprobs") {
      if (value.is_null()) continue;
      int64_t x;
      if (auto e = internal::ReadInt(value, key, 0, limits.max_completion_logprobs, &x)) return *e;
      req.logprobs = static_cast<int>(x);
    } else if (key == "best_of") {
      if (value.is_null()) continue;
      int64_t x;
      if (auto e = internal::ReadInt(value, key, 1, limits.max_n, &x)) return *e;
      best_of = x;
    } else if (key == "suffix") {
      if (value.is_null()) continue;
      std::string s;
      if (auto e = internal::ReadString(value, key, &s)) return *e;
      if (!s.empty()) return UnsupportedParameter(key, "is not supported: this server has no fill-in-the-middle.");
    } else if (limits.reject_unknown_fields) {
      return UnknownParameter(key);
    }
  }
  if (!have_prompt) return MissingParameter("prompt");
  if (auto e = internal::FinishGenerationOptions(body, &req.options)) return *e;
  // max_tokens 0 with echo: the prompt (and its logprobs) without a completion.
  if (!req.echo) {
    if (auto e = internal::CheckMaxTokensPositive(req.options)) return *e;
  }
  // best_of > n means "generate best_of, return the n most likely": not done.
  if (best_of && *best_of != req.options.n) {
    return UnsupportedValue("best_of", "only best_of equal to n is supported.");
  }
  return req;
}

}  // namespace pagoda::api
