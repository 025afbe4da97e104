#include "gateway/usage_reader.h"

#include <nlohmann/json.hpp>

namespace pagoda::gateway {

std::optional<ReportedUsage> ReadUsage(std::string_view json) {
  // Most stream chunks carry no usage, or "usage":null: skip them unparsed.
  const size_t key = json.find("\"usage\"");
  if (key == std::string_view::npos) return std::nullopt;
  const size_t value = json.find_first_not_of(" \t\r\n:", key + 7);
  if (value == std::string_view::npos || json[value] == 'n') return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto u = j.find("usage");
  if (u == j.end() || !u->is_object()) return std::nullopt;
  const auto p = u->find("prompt_tokens");
  if (p == u->end() || !p->is_number_integer()) return std::nullopt;
  ReportedUsage r;
  r.prompt_tokens = p->get<int64_t>();
  const auto c = u->find("completion_tokens");
  if (c != u->end() && c->is_number_integer()) r.completion_tokens = c->get<int64_t>();
  const auto ch = j.find("choices");
  r.usage_only = ch != j.end() && ch->is_array() && ch->empty();
  const auto d = u->find("prompt_tokens_details");
  if (d != u->end() && d->is_object()) {
    const auto c = d->find("cached_tokens");
    if (c != d->end() && c->is_number_integer()) r.cached_tokens = c->get<int64_t>();
  }
  return r;
}

}  // namespace pagoda::gateway
