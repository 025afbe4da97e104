#include "control/admin_request.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <set>

#include "api/json_text.h"

namespace pagoda::control {
namespace {

using json = nlohmann::json;

// The field's value, or nullptr when absent or null.
const json* Field(const json& body, std::string_view field) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

MaybeError CheckText(std::string_view field, const std::string& s, size_t max_bytes) {
  if (!api::IsValidUtf8(s)) return api::InvalidUtf8(field);
  if (s.size() > max_bytes) {
    return api::InvalidValue(field, "Invalid '" + std::string(field) + "': longer than " + std::to_string(max_bytes) +
                                        " bytes.");
  }
  if (std::any_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
      })) {
    return api::InvalidValue(field, "Invalid '" + std::string(field) + "': contains a control character.");
  }
  return std::nullopt;
}

void SetPresent(bool* present, bool value) {
  if (present) *present = value;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

MaybeError CheckFields(const json& body, std::initializer_list<std::string_view> allowed) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      // The name goes back in the message: only when it is printable.
      if (!api::IsValidUtf8(it.key()) || it.key().size() > 64) return api::UnknownParameter("(unprintable)");
      return api::UnknownParameter(it.key());
    }
  }
  return std::nullopt;
}

MaybeError ReadString(const json& body, std::string_view field, std::string* out, bool* present, size_t max_bytes) {
  SetPresent(present, false);
  const json* v = Field(body, field);
  if (!v) return std::nullopt;
  if (!v->is_string()) return api::InvalidType(field, "a string");
  const auto& s = v->get_ref<const std::string&>();
  if (auto e = CheckText(field, s, max_bytes)) return e;
  *out = s;
  SetPresent(present, true);
  return std::nullopt;
}

MaybeError ReadInt(const json& body, std::string_view field, int64_t min, int64_t max, int64_t* out, bool* present) {
  SetPresent(present, false);
  const json* v = Field(body, field);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return api::InvalidType(field, "an integer");
  int64_t x;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    x = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                        : static_cast<int64_t>(u);
  } else {
    x = v->get<int64_t>();
  }
  if (x < min || x > max) {
    return api::InvalidValue(field, "Invalid '" + std::string(field) + "': expected an integer in [" +
                                        std::to_string(min) + ", " + std::to_string(max) + "], got " +
                                        std::to_string(x) + ".");
  }
  *out = x;
  SetPresent(present, true);
  return std::nullopt;
}

MaybeError ReadNumber(const json& body, std::string_view field, double min, double max, bool min_exclusive,
                      double* out, bool* present) {
  SetPresent(present, false);
  const json* v = Field(body, field);
  if (!v) return std::nullopt;
  if (!v->is_number()) return api::InvalidType(field, "a number");
  const double x = v->get<double>();
  const bool low = min_exclusive ? !(x > min) : !(x >= min);
  if (!std::isfinite(x) || low || x > max) {
    char range[96];
    std::snprintf(range, sizeof(range), "%s%g, %g]", min_exclusive ? "(" : "[", min, max);
    return api::InvalidValue(field, "Invalid '" + std::string(field) + "': expected a number in " + range + ".");
  }
  *out = x;
  SetPresent(present, true);
  return std::nullopt;
}

MaybeError ReadBool(const json& body, std::string_view field, bool* out, bool* present) {
  SetPresent(present, false);
  const json* v = Field(body, field);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return api::InvalidType(field, "a boolean");
  *out = v->get<bool>();
  SetPresent(present, true);
  return std::nullopt;
}

MaybeError ReadStringList(const json& body, std::string_view field, std::vector<std::string>* out, bool* present,
                          size_t max_items) {
  SetPresent(present, false);
  const json* v = Field(body, field);
  if (!v) return std::nullopt;
  if (!v->is_array()) return api::InvalidType(field, "an array of strings");
  if (v->size() > max_items) {
    return api::InvalidValue(field, "Invalid '" + std::string(field) + "': more than " + std::to_string(max_items) +
                                        " items.");
  }
  std::vector<std::string> items;
  std::set<std::string> seen;
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string item_field = std::string(field) + "[" + std::to_string(i) + "]";
    const json& item = (*v)[i];
    if (!item.is_string()) return api::InvalidType(item_field, "a string");
    const auto& s = item.get_ref<const std::string&>();
    if (s.empty()) return api::InvalidValue(item_field, "Invalid '" + item_field + "': empty.");
    if (auto e = CheckText(item_field, s, 256)) return e;
    if (seen.insert(s).second) items.push_back(s);
  }
  *out = std::move(items);
  SetPresent(present, true);
  return std::nullopt;
}

bool IsSlug(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
}

MaybeError CheckSlug(std::string_view field, std::string_view value) {
  if (IsSlug(value)) return std::nullopt;
  return api::InvalidValue(field, "Invalid '" + std::string(field) +
                                      "': ids are 1 to 64 characters of a-z, 0-9, '_' and '-'.");
}

std::optional<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] != '%') {
      out += s[i];
    } else {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = HexDigit(s[i + 1]), lo = HexDigit(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

api::ApiResult<QueryParams> ParseQuery(std::string_view query, std::initializer_list<std::string_view> allowed) {
  QueryParams out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const auto name = PercentDecode(pair.substr(0, eq));
    const auto value = PercentDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!name || !value) return api::InvalidValue("", "Malformed percent-escape in the query string.");
    if (std::find(allowed.begin(), allowed.end(), *name) == allowed.end()) {
      if (!api::IsValidUtf8(*name) || name->size() > 64) return api::UnknownParameter("(unprintable)");
      return api::UnknownParameter(*name);
    }
    if (!api::IsValidUtf8(*value)) return api::InvalidUtf8(*name);
    if (!out.emplace(*name, *value).second) {
      return api::InvalidValue(*name, "Query parameter '" + *name + "' is given more than once.");
    }
  }
  return out;
}

api::ApiResult<int64_t> ParseTimeParam(std::string_view param, std::string_view value, bool end_of_range) {
  const std::string p(param);
  const auto bad = [&] {
    return api::InvalidValue(param, "Invalid '" + p + "': expected unix seconds or a UTC date YYYY-MM-DD.");
  };
  if (value.empty() || value.size() > 20) return bad();
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 12) return bad();  // past year 33658: a typo, not a time
    return static_cast<int64_t>(std::stoll(std::string(value))) * 1000;
  }
  int y = 0, m = 0, d = 0;
  char tail = 0;
  if (value.size() != 10 || std::sscanf(std::string(value).c_str(), "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3 ||
      value[4] != '-' || value[7] != '-' || y < 1970 || m < 1 || m > 12 || d < 1 || d > 31) {
    return bad();
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = m - 1;
  tm.tm_mday = d;
  const std::time_t t = timegm(&tm);
  if (t == static_cast<std::time_t>(-1) || tm.tm_mday != d) return bad();  // 2026-02-30 normalizes to March
  const int64_t day_ms = static_cast<int64_t>(t) * 1000;
  return end_of_range ? day_ms + 86'400'000 : day_ms;
}

api::ApiError NotFoundError(std::string message, std::string_view code, std::string_view param) {
  api::ApiError e;
  e.status = 404;
  e.message = std::move(message);
  e.code = std::string(code);
  if (!param.empty()) e.param = std::string(param);
  return e;
}

api::ApiError ConflictError(std::string message, std::string_view code) {
  api::ApiError e;
  e.status = 409;
  e.message = std::move(message);
  e.code = std::string(code);
  return e;
}

}  // namespace pagoda::control
