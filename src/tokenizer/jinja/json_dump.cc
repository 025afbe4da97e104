#include "tokenizer/jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/error.h"

namespace pagoda::jinja {
namespace {

void AppendEscapedUnit(uint32_t u, std::string* out) {
  char b[8];
  std::snprintf(b, sizeof(b), "\\u%04x", u);
  *out += b;
}

// Decodes one UTF-8 sequence at s[i]; invalid bytes decode as themselves.
uint32_t DecodeAt(const std::string& s, size_t* i) {
  const unsigned char c = s[*i];
  int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
  if (n < 0 || *i + n >= s.size()) {
    ++*i;
    return c;
  }
  uint32_t cp = n == 0 ? c : c & (0x3F >> n);
  for (int k = 1; k <= n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[*i + k]) & 0x3F);
  *i += n + 1;
  return cp;
}

void DumpString(const std::string& s, bool ensure_ascii, std::string* out) {
  *out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    if (c >= 0x80) {
      if (!ensure_ascii) {
        *out += static_cast<char>(c);
        ++i;
        continue;
      }
      const uint32_t cp = DecodeAt(s, &i);
      if (cp >= 0x10000) {
        AppendEscapedUnit(0xD800 + ((cp - 0x10000) >> 10), out);
        AppendEscapedUnit(0xDC00 + ((cp - 0x10000) & 0x3FF), out);
      } else {
        AppendEscapedUnit(cp, out);
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          AppendEscapedUnit(c, out);
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    if (o.separators) {
      item_sep_ = o.separators->first;
      key_sep_ = o.separators->second;
    } else {
      item_sep_ = o.indent ? "," : ", ";
      key_sep_ = ": ";
    }
  }

  void Dump(const Value& v, int depth, std::string* out) {
    if (depth > 512) throw JinjaError("tojson: value nested too deeply");
    switch (v.kind()) {
      case Value::Kind::kUndefined:
      case Value::Kind::kNone: *out += "null"; return;
      case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::kInt: *out += std::to_string(v.as_int()); return;
      case Value::Kind::kFloat: {
        const double f = v.as_float();
        *out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity") : FormatFloat(f);
        return;
      }
      case Value::Kind::kString: DumpString(v.as_string(), o_.ensure_ascii, out); return;
      case Value::Kind::kList: {
        const List& l = v.as_list();
        if (l.empty()) {
          *out += "[]";
          return;
        }
        *out += '[';
        for (size_t i = 0; i < l.size(); ++i) {
          if (i > 0) *out += item_sep_;
          Newline(depth + 1, out);
          Dump(l[i], depth + 1, out);
        }
        Newline(depth, out);
        *out += ']';
        return;
      }
      case Value::Kind::kDict:
      case Value::Kind::kNamespace: {
        std::vector<const std::pair<std::string, Value>*> entries;
        for (const auto& e : v.as_dict()) entries.push_back(&e);
        if (entries.empty()) {
          *out += "{}";
          return;
        }
        if (o_.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
        }
        *out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) *out += item_sep_;
          Newline(depth + 1, out);
          DumpString(entries[i]->first, o_.ensure_ascii, out);
          *out += key_sep_;
          Dump(entries[i]->second, depth + 1, out);
        }
        Newline(depth, out);
        *out += '}';
        return;
      }
      case Value::Kind::kCallable: throw JinjaError("tojson: a function is not JSON serializable");
    }
  }

 private:
  void Newline(int depth, std::string* out) const {
    if (!o_.indent) return;
    *out += '\n';
    out->append(static_cast<size_t>(std::max(0, *o_.indent)) * depth, ' ');
  }

  const JsonDumpOptions& o_;
  std::string item_sep_, key_sep_;
};

}  // namespace

std::string JsonDump(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).Dump(v, 0, &out);
  return out;
}

}  // namespace pagoda::jinja
