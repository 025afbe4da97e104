#include "api/rerank_request.h"

#include <nlohmann/json.hpp>

#include "api/json_fields.h"
#include "api/json_text.h"

namespace pagoda::api {
namespace {

using json = nlohmann::json;
using internal::Path;

std::optional<ApiError> ReadText(const json& v, const std::string& param, std::string* out) {
  if (auto e = internal::ReadString(v, param, out)) return e;
  if (out->empty()) return InvalidValue(param, "Invalid '" + param + "': empty string.");
  return std::nullopt;
}

// A string or a list of strings (vLLM's text_1 / text_2).
std::optional<ApiError> ReadTexts(const json& v, const std::string& param, std::vector<std::string>* out) {
  if (v.is_string()) {
    out->emplace_back();
    return ReadText(v, param, &out->back());
  }
  if (!v.is_array()) return InvalidType(param, "a string or an array of strings");
  if (v.empty()) return InvalidValue(param, "Invalid '" + param + "': empty array.");
  if (v.size() > static_cast<size_t>(kMaxRerankDocuments)) {
    return InvalidValue(param, "Invalid '" + param + "': at most " + std::to_string(kMaxRerankDocuments) +
                                   " entries, got " + std::to_string(v.size()) + ".");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    out->emplace_back();
    if (auto e = ReadText(v[i], Path(param, i), &out->back())) return e;
  }
  return std::nullopt;
}

std::optional<ApiError> ReadDocuments(const json& v, std::vector<std::string>* out) {
  if (!v.is_array()) return InvalidType("documents", "an array of strings or of objects with 'text'");
  if (v.empty()) return InvalidValue("documents", "Invalid 'documents': empty array.");
  if (v.size() > static_cast<size_t>(kMaxRerankDocuments)) {
    return InvalidValue("documents", "Invalid 'documents': at most " + std::to_string(kMaxRerankDocuments) +
                                         " documents, got " + std::to_string(v.size()) + ".");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string param = Path("documents", i);
    out->emplace_back();
    if (v[i].is_object()) {
      auto it = v[i].find("text");
      if (it == v[i].end()) return MissingParameter(Path(param, "text"));
      if (auto e = ReadText(*it, Path(param, "text"), &out->back())) return e;
    } else if (v[i].is_string()) {
      if (auto e = ReadText(v[i], param, &out->back())) return e;
    } else {
      return InvalidType(param, "a string or an object with 'text'");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ReadTruncate(const json& v, std::optional<int64_t>* out) {
  int64_t x;
  if (auto e = internal::ReadInt(v, "truncate_prompt_tokens", 1, 1 << 24, &x)) return e;
  *out = x;
  return std::nullopt;
}

}  // namespace

ApiResult<RerankRequest> ParseRerankRequest(std::string_view body) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  RerankRequest req;
  bool have_model = false, have_query = false, have_documents = false;
  for (const auto& [key, value] : parsed.value().items()) {
    if (value.is_null()) continue;
    if (key == "model") {
      if (auto e = internal::ReadString(value, key, &req.model)) return *e;
      have_model = true;
    } else if (key == "query") {
      if (auto e = ReadText(value, key, &req.query)) return *e;
      have_query = true;
    } else if (key == "documents") {
      if (auto e = ReadDocuments(value, &req.documents)) return *e;
      have_documents = true;
    } else if (key == "top_n") {
      int64_t x;
      if (auto e = internal::ReadInt(value, key, 1, 1 << 30, &x)) return *e;
      req.top_n = x;
    } else if (key == "return_documents") {
      if (auto e = internal::ReadBool(value, key, &req.return_documents)) return *e;
    } else if (key == "truncate_prompt_tokens") {
      if (auto e = ReadTruncate(value, &req.truncate_prompt_tokens)) return *e;
    }
  }
  if (!have_model) return MissingParameter("model");
  if (!have_query) return MissingParameter("query");
  if (!have_documents) return MissingParameter("documents");
  return req;
}

ApiResult<ScoreRequest> ParseScoreRequest(std::string_view body) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  ScoreRequest req;
  bool have_model = false;
  for (const auto& [key, value] : parsed.value().items()) {
    if (value.is_null()) continue;
    if (key == "model") {
      if (auto e = internal::ReadString(value, key, &req.model)) return *e;
      have_model = true;
    } else if (key == "text_1") {
      if (auto e = ReadTexts(value, key, &req.text_1)) return *e;
    } else if (key == "text_2") {
      if (auto e = ReadTexts(value, key, &req.text_2)) return *e;
    } else if (key == "truncate_prompt_tokens") {
      if (auto e = ReadTruncate(value, &req.truncate_prompt_tokens)) return *e;
    }
  }
  if (!have_model) return MissingParameter("model");
  if (req.text_1.empty()) return MissingParameter("text_1");
  if (req.text_2.empty()) return MissingParameter("text_2");
  if (req.text_1.size() > 1 && req.text_1.size() != req.text_2.size()) {
    return InvalidValue("text_1", "Invalid 'text_1': " + std::to_string(req.text_1.size()) +
                                      " texts for " + std::to_string(req.text_2.size()) +
                                      " in text_2; give one text_1 or as many as text_2.");
  }
  if (req.text_1.size() == 1) req.text_1.resize(req.text_2.size(), req.text_1.front());
  return req;
}

}  // namespace pagoda::api
