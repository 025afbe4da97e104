#include "batch/input_lines.h"

#include <nlohmann/json.hpp>
#include <unordered_set>

#include "api/chat_request.h"
#include "api/completion_request.h"

namespace pagoda::batch {
namespace {

using nlohmann::json;

constexpr size_t kMaxCustomIdBytes = 512;

void Fail(CheckedLine& l, std::string code, std::string message) {
  l.valid = false;
  l.error_code = std::move(code);
  l.error_message = std::move(message);
}

void CheckOne(std::string_view text, std::string_view endpoint, const api::RequestLimits& limits,
              std::unordered_set<std::string>& seen, CheckedLine& l) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Fail(l, "invalid_json", "line " + std::to_string(l.line_no) + " is not a JSON object");
  }
  auto id = j.find("custom_id");
  if (id != j.end() && id->is_string()) l.custom_id = id->get<std::string>();
  if (id == j.end() || !id->is_string() || l.custom_id.empty()) {
    l.custom_id.clear();
    return Fail(l, "missing_custom_id", "custom_id must be a non-empty string");
  }
  if (l.custom_id.size() > kMaxCustomIdBytes) {
    l.custom_id.clear();
    return Fail(l, "invalid_custom_id", "custom_id is longer than 512 bytes");
  }
  auto method = j.find("method");
  if (method == j.end() || !method->is_string() || *method != "POST") {
    return Fail(l, "invalid_method", "method must be \"POST\"");
  }
  auto url = j.find("url");
  if (url == j.end() || !url->is_string()) return Fail(l, "invalid_url", "url must be a string");
  if (*url != endpoint) {
    return Fail(l, "invalid_url", "url must be the batch's endpoint " + std::string(endpoint));
  }
  auto body = j.find("body");
  if (body == j.end() || !body->is_object()) return Fail(l, "invalid_body", "body must be a JSON object");
  if (auto s = body->find("stream"); s != body->end() && s->is_boolean() && s->get<bool>()) {
    return Fail(l, "invalid_body", "body.stream must not be true in a batch");
  }
  const std::string body_text = body->dump();
  std::optional<api::ApiError> err;
  if (endpoint == "/v1/chat/completions") {
    auto r = api::ParseChatCompletionRequest(body_text, limits);
    if (!r.ok()) err = r.error();
  } else if (endpoint == "/v1/completions") {
    auto r = api::ParseCompletionRequest(body_text, limits);
    if (!r.ok()) err = r.error();
  }
  if (err) {
    std::string message = err->message;
    if (err->param && !err->param->empty()) message = "body." + *err->param + ": " + message;
    return Fail(l, "invalid_body", message);
  }
  if (!seen.insert(l.custom_id).second) {
    return Fail(l, "duplicate_custom_id", "custom_id repeats an earlier line's; each must be unique in a batch");
  }
  l.valid = true;
}

}  // namespace

bool IsBatchEndpoint(std::string_view endpoint) {
  return endpoint == "/v1/chat/completions" || endpoint == "/v1/completions";
}

std::vector<CheckedLine> CheckInputLines(std::string_view content, std::string_view endpoint,
                                         const api::RequestLimits& limits) {
  std::vector<CheckedLine> out;
  std::unordered_set<std::string> seen;
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view text = content.substr(pos, end - pos);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    const size_t begin = pos;
    pos = end + 1;
    if (text.find_first_not_of(" \t") == std::string_view::npos) continue;
    CheckedLine l;
    l.line_no = ++line_no;
    l.offset = static_cast<int64_t>(begin);
    l.length = static_cast<int64_t>(text.size());
    CheckOne(text, endpoint, limits, seen, l);
    out.push_back(std::move(l));
  }
  return out;
}

std::string LineBody(std::string_view content, const CheckedLine& line) {
  if (line.offset < 0 || line.length < 0 || static_cast<size_t>(line.offset + line.length) > content.size()) return {};
  json j = json::parse(content.substr(static_cast<size_t>(line.offset), static_cast<size_t>(line.length)), nullptr,
                       false);
  if (j.is_discarded() || !j.is_object()) return {};
  auto body = j.find("body");
  if (body == j.end() || !body->is_object()) return {};
  return body->dump();
}

}  // namespace pagoda::batch
