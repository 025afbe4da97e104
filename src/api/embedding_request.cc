#include "api/embedding_request.h"

#include <nlohmann/json.hpp>

#include "api/json_fields.h"
#include "api/json_text.h"
#include "base/base64.h"

namespace pagoda::api {
using json = nlohmann::json;

ApiResult<EmbeddingRequest> ParseEmbeddingRequest(std::string_view body, const RequestLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  const json& b = parsed.value();
  EmbeddingRequest req;
  bool have_input = false, have_model = false;
  for (const auto& [key, value] : b.items()) {
    if (value.is_null()) continue;  // null is "absent"
    if (key == "model") {
      if (auto e = internal::ReadString(value, key, &req.model)) return *e;
      have_model = true;
    } else if (key == "input") {
      if (auto e = internal::ReadPromptList(value, "input", kMaxEmbeddingInputs, /*allow_empty_text=*/false,
                                            &req.inputs)) {
        return *e;
      }
      have_input = true;
    } else if (key == "encoding_format") {
      std::string f;
      if (auto e = internal::ReadString(value, key, &f)) return *e;
      if (f == "float") {
        req.encoding_format = EncodingFormat::kFloat;
      } else if (f == "base64") {
        req.encoding_format = EncodingFormat::kBase64;
      } else {
        return InvalidValue(key, "Invalid 'encoding_format': '" + f + "'; expected 'float' or 'base64'.");
      }
    } else if (key == "dimensions") {
      int64_t x;
      if (auto e = internal::ReadInt(value, key, 1, 1 << 20, &x)) return *e;
      req.dimensions = x;
    } else if (key == "truncate_prompt_tokens") {
      int64_t x;
      if (auto e = internal::ReadInt(value, key, 1, 1 << 24, &x)) return *e;
      req.truncate_prompt_tokens = x;
    } else if (key == "normalize") {
      bool x;
      if (auto e = internal::ReadBool(value, key, &x)) return *e;
      req.normalize = x;
    } else if (key == "user") {
      if (auto e = internal::ReadString(value, key, &req.user)) return *e;
    } else if (limits.reject_unknown_fields) {
      return UnknownParameter(key);
    }
  }
  if (!have_model) return MissingParameter("model");
  if (!have_input) return MissingParameter("input");
  return req;
}

std::string Base64Floats(const std::vector<float>& v) {
  // x86 and the clients' decoders are little-endian: the bytes as they lie.
  static_assert(sizeof(float) == 4);
  return Base64Encode(v.data(), v.size() * sizeof(float));
}

}  // namespace pagoda::api
