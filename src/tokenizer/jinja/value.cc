#include "tokenizer/jinja/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace pagoda::jinja {

const Value* CallArgs::Get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), i_(i) {}
Value::Value(double f) : kind_(Kind::kFloat), f_(f) {}
Value::Value(std::string s) : kind_(Kind::kString), str_(std::make_shared<const std::string>(std::move(s))) {}
Value::Value(List list) : kind_(Kind::kList), list_(std::make_shared<const List>(std::move(list))) {}
Value::Value(Dict dict) : kind_(Kind::kDict), dict_(std::make_shared<Dict>(std::move(dict))) {}

Value Value::Namespace(Dict attrs) {
  Value v(std::move(attrs));
  v.kind_ = Kind::kNamespace;
  return v;
}

Value Value::Callable(std::string name, Function fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::make_shared<const std::pair<std::string, Function>>(std::move(name), std::move(fn));
  return v;
}

Value Value::FromJson(const nlohmann::ordered_json& j) {
  using J = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case J::null: return None();
    case J::boolean: return Value(j.get<bool>());
    case J::number_integer: return Value(j.get<int64_t>());
    case J::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case J::number_float: return Value(j.get<double>());
    case J::string: return Value(j.get<std::string>());
    case J::array: {
      List list;
      list.reserve(j.size());
      for (const auto& e : j) list.push_back(FromJson(e));
      return Value(std::move(list));
    }
    case J::object: {
      Dict dict;
      dict.reserve(j.size());
      for (const auto& [k, e] : j.items()) dict.emplace_back(k, FromJson(e));
      return Value(std::move(dict));
    }
    default: return Value();  // binary, discarded
  }
}

double Value::as_number() const {
  switch (kind_) {
    case Kind::kInt: return static_cast<double>(i_);
    case Kind::kFloat: return f_;
    case Kind::kBool: return b_ ? 1 : 0;
    default: return 0;
  }
}

const Value* Value::Find(std::string_view key) const {
  if (kind_ != Kind::kDict && kind_ != Kind::kNamespace) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::SetAttr(const std::string& key, Value v) const {
  for (auto& [k, old] : *dict_) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  dict_->emplace_back(key, std::move(v));
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0;
    case Kind::kString: return !str_->empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return !dict_->empty();
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

std::string FormatFloat(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form, then Python's repr layout:
  // positional for exponents in [-4, 16), else d.ddde+XX.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  bool neg = false;
  if (!mant.empty() && mant[0] == '-') {
    neg = true;
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(-exp - 1, '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return neg ? "-" + out : out;
}

namespace {

std::string ReprString(const std::string& s) {
  // Python picks single quotes unless the text has ' and no ".
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == static_cast<unsigned char>(q)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof(b), "\\x%02x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string Value::Str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return *str_;
    default: return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return b_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return FormatFloat(f_);
    case Kind::kString: return ReprString(*str_);
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i > 0) out += ", ";
        out += (*list_)[i].Repr();
      }
      return out + "]";
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      std::string out = kind_ == Kind::kNamespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        if (i > 0) out += ", ";
        out += ReprString((*dict_)[i].first) + ": " + (*dict_)[i].second.Repr();
      }
      return out + (kind_ == Kind::kNamespace ? "}>" : "}");
    }
    case Kind::kCallable: return "<function " + fn_->first + ">";
  }
  return "";
}

bool Value::Equals(const Value& o) const {
  const bool num_a = is_number() || is_bool(), num_b = o.is_number() || o.is_bool();
  if (num_a && num_b) {
    if ((is_int() || is_bool()) && (o.is_int() || o.is_bool())) {
      return (is_int() ? i_ : b_) == (o.is_int() ? o.i_ : o.b_);
    }
    return as_number() == o.as_number();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return *str_ == *o.str_;
    case Kind::kList: {
      if (list_->size() != o.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].Equals((*o.list_)[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_->size() != o.dict_->size()) return false;
      for (const auto& [k, v] : *dict_) {
        const Value* w = o.Find(k);
        if (w == nullptr || !v.Equals(*w)) return false;
      }
      return true;
    }
    case Kind::kNamespace: return dict_ == o.dict_;
    case Kind::kCallable: return fn_ == o.fn_;
    default: return false;
  }
}

const char* Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "namespace";
    case Kind::kCallable: return "function";
  }
  return "?";
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> SplitCodePoints(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t j = i + 1;
    while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
    out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace pagoda::jinja
