// Filters (`x | trim`) and tests (`x is defined`): the ones chat templates
// use, with Jinja's semantics (Python's where @huggingface/jinja differs by
// accident of JavaScript; see docs/CHAT_TEMPLATES.md).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/json_dump.h"
#include "tokenizer/jinja/string_ops.h"

namespace pagoda::jinja {
namespace {

[[noreturn]] void Fail(const std::string& what) { throw JinjaError(what); }

bool BoolArg(const Value* v, bool fallback) { return v == nullptr ? fallback : v->Truthy(); }

// "a.b.0" attribute paths of selectattr/map/sort(attribute=...).
Value Attribute(const Value& item, const Value& path) {
  if (path.is_int()) return GetItem(item, path);
  if (!path.is_string()) Fail("attribute must be a string");
  Value v = item;
  const std::string& p = path.as_string();
  size_t start = 0;
  while (true) {
    const size_t dot = p.find('.', start);
    const std::string part = p.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = digits && v.is_list() ? GetItem(v, Value(static_cast<int64_t>(std::stoll(part)))) : GetItem(v, Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

int64_t Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(CodePointCount(v.as_string()));
    case Value::Kind::kList: return static_cast<int64_t>(v.as_list().size());
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: return static_cast<int64_t>(v.as_dict().size());
    default: Fail(std::string("object of type '") + v.TypeName() + "' has no len()");
  }
}

Value ToInt(const Value& v, const CallArgs& args) {
  const Value* d = args.Get(0, "default");
  const Value fallback = d != nullptr ? *d : Value(int64_t{0});
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
  if (v.is_float()) return std::isfinite(v.as_float()) ? Value(static_cast<int64_t>(v.as_float())) : fallback;
  if (!v.is_string()) return fallback;
  const std::string s = Strip(v.as_string(), std::nullopt, true, true);
  if (s.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (*end == '\0' && errno == 0) return Value(static_cast<int64_t>(i));
  const double f = std::strtod(s.c_str(), &end);  // Jinja's int("3.5") is 3
  if (*end == '\0' && std::isfinite(f) && std::fabs(f) < 9.2e18) return Value(static_cast<int64_t>(f));
  return fallback;
}

Value ToFloat(const Value& v, const CallArgs& args) {
  const Value* d = args.Get(0, "default");
  const Value fallback = d != nullptr ? *d : Value(0.0);
  if (v.is_number() || v.is_bool()) return Value(v.as_number());
  if (!v.is_string()) return fallback;
  const std::string s = Strip(v.as_string(), std::nullopt, true, true);
  char* end = nullptr;
  const double f = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0' ? Value(f) : fallback;
}

Value Tojson(const Value& v, const CallArgs& args) {
  JsonDumpOptions o;
  if (const Value* indent = args.Get(0, "indent"); indent != nullptr && !indent->is_none()) {
    if (!indent->is_int()) Fail("tojson: indent must be an integer");
    o.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, 64));
  }
  o.ensure_ascii = BoolArg(args.Get(99, "ensure_ascii"), false);
  o.sort_keys = BoolArg(args.Get(99, "sort_keys"), false);
  if (const Value* sep = args.Get(99, "separators"); sep != nullptr && !sep->is_none()) {
    if (!sep->is_list() || sep->as_list().size() != 2 || !sep->as_list()[0].is_string() || !sep->as_list()[1].is_string()) {
      Fail("tojson: separators must be a pair of strings");
    }
    o.separators = {sep->as_list()[0].as_string(), sep->as_list()[1].as_string()};
  }
  return Value(JsonDump(v, o));
}

// selectattr/rejectattr (by_attr) and select/reject.
Value Select(const Value& v, const CallArgs& args, bool by_attr, bool keep) {
  size_t i = 0;
  Value attr;
  if (by_attr) {
    if (args.positional.empty()) Fail("selectattr/rejectattr need an attribute");
    attr = args.positional[i++];
  }
  std::string test;
  if (i < args.positional.size()) {
    if (!args.positional[i].is_string()) Fail("the test name must be a string");
    test = args.positional[i++].as_string();
  }
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + i, args.positional.end());
  List out;
  for (const Value& item : Iterate(v)) {
    const Value x = by_attr ? Attribute(item, attr) : item;
    const bool hit = test.empty() ? x.Truthy() : ApplyTest(test, x, test_args);
    if (hit == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value Map(const Value& v, const CallArgs& args) {
  List out;
  if (const Value* attr = args.Get(99, "attribute"); attr != nullptr) {
    const Value* dflt = args.Get(99, "default");
    for (const Value& item : Iterate(v)) {
      Value x = Attribute(item, *attr);
      out.push_back(x.is_undefined() && dflt != nullptr ? *dflt : x);
    }
    return Value(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) Fail("map needs a filter name or attribute=");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : Iterate(v)) out.push_back(ApplyFilter(args.positional[0].as_string(), item, rest));
  return Value(std::move(out));
}

Value Sort(const Value& v, const CallArgs& args) {
  List items = Iterate(v);
  const bool reverse = BoolArg(args.Get(0, "reverse"), false);
  const bool case_sensitive = BoolArg(args.Get(1, "case_sensitive"), false);
  const Value* attr = args.Get(2, "attribute");
  auto key = [&](const Value& x) {
    Value k = attr != nullptr ? Attribute(x, *attr) : x;
    return !case_sensitive && k.is_string() ? Value(ToLower(k.as_string())) : k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return BinaryOp(reverse ? ">" : "<", key(a), key(b)).as_bool();
  });
  return Value(std::move(items));
}

Value Indent(const Value& v, const CallArgs& args) {
  const Value* w = args.Get(0, "width");
  const std::string pad = w != nullptr && w->is_string() ? w->as_string()
                                                         : std::string(w != nullptr ? std::clamp<int64_t>(w->as_int(), 0, 256) : 4, ' ');
  const bool first = BoolArg(args.Get(1, "first"), false);
  const bool blank = BoolArg(args.Get(2, "blank"), false);
  const std::vector<std::string> lines = Split(v.Str(), std::string("\n"), -1);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    if ((i > 0 || first) && (blank || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  return Value(std::move(out));
}

Value Join(const Value& v, const CallArgs& args) {
  const Value* sep = args.Get(0, "d");
  const Value* attr = args.Get(1, "attribute");
  std::string out;
  const List items = Iterate(v);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && sep != nullptr) out += sep->Str();
    out += (attr != nullptr ? Attribute(items[i], *attr) : items[i]).Str();
  }
  return Value(std::move(out));
}

}  // namespace

Value ApplyFilter(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "safe" || name == "escape" || name == "e" || name == "forceescape") {
    return v;  // chat templates render without autoescape
  }
  if (name == "tojson") return Tojson(v, args);
  if (name == "default" || name == "d") {
    const Value* d = args.Get(0, "default_value");
    const bool boolean = BoolArg(args.Get(1, "boolean"), false);
    if (v.is_undefined() || (boolean && !v.Truthy())) return d != nullptr ? *d : Value(std::string());
    return v;
  }
  if (name == "length" || name == "count") return Value(Length(v));
  if (name == "string") return Value(v.Str());
  if (name == "int") return ToInt(v, args);
  if (name == "float") return ToFloat(v, args);
  if (name == "list") return Value(Iterate(v));
  if (name == "join") return Join(v, args);
  if (name == "first" || name == "last") {
    const List items = Iterate(v);
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "items" || name == "dictsort") {
    if (v.is_undefined()) return Value(List{});
    if (!v.is_dict()) Fail(std::string("items: expected a mapping, got '") + v.TypeName() + "'");
    List out;
    for (const auto& [k, x] : v.as_dict()) out.emplace_back(List{Value(k), x});
    if (name == "dictsort") {
      std::stable_sort(out.begin(), out.end(), [](const Value& a, const Value& b) {
        return ToLower(a.as_list()[0].as_string()) < ToLower(b.as_list()[0].as_string());
      });
    }
    return Value(std::move(out));
  }
  if (name == "selectattr" || name == "rejectattr") return Select(v, args, true, name == "selectattr");
  if (name == "select" || name == "reject") return Select(v, args, false, name == "select");
  if (name == "map") return Map(v, args);
  if (name == "sort") return Sort(v, args);
  if (name == "reverse") {
    if (v.is_string()) return Slice(v, Value(), Value(), Value(int64_t{-1}));
    List items = Iterate(v);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "unique") {
    List out;
    for (const Value& x : Iterate(v)) {
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return y.Equals(x); })) out.push_back(x);
    }
    return Value(std::move(out));
  }
  if (name == "indent") return Indent(v, args);
  if (name == "abs") {
    if (v.is_int()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    Fail("abs: expected a number");
  }
  if (name == "round") {
    const Value* prec = args.Get(0, "precision");
    const double scale = std::pow(10.0, prec != nullptr ? static_cast<double>(prec->as_int()) : 0.0);
    return Value(std::round(v.as_number() * scale) / scale);
  }
  if (name == "bool") return Value(v.Truthy());
  // Jinja's string filters take str(value): None|trim is "None".
  const std::string s = v.Str();
  if (name == "trim") {
    const Value* chars = args.Get(0, "chars");
    return Value(Strip(s, chars != nullptr && chars->is_string() ? std::optional(chars->as_string()) : std::nullopt, true, true));
  }
  if (name == "upper") return Value(ToUpper(s));
  if (name == "lower") return Value(ToLower(s));
  if (name == "title") return Value(ToTitle(s));
  if (name == "capitalize") return Value(Capitalize(s));
  if (name == "replace") {
    const Value* from = args.Get(0, "old");
    const Value* to = args.Get(1, "new");
    if (from == nullptr || to == nullptr) Fail("replace takes two arguments");
    const Value* count = args.Get(2, "count");
    return Value(Replace(s, from->Str(), to->Str(), count != nullptr && count->is_int() ? count->as_int() : -1));
  }
  if (name == "wordcount") return Value(static_cast<int64_t>(Split(s, std::nullopt, -1).size()));
  Fail("unknown filter '" + name + "'");
}

bool ApplyTest(const std::string& name, const Value& v, const CallArgs& args) {
  const Value* arg = args.Get(0, "other");
  auto need_arg = [&]() -> const Value& {
    if (arg == nullptr) Fail("test '" + name + "' takes an argument");
    return *arg;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "callable") return v.is_callable();
  if (name == "odd" || name == "even") {
    if (!v.is_int()) Fail("test '" + name + "' expects an integer");
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const Value& d = need_arg();
    if (!v.is_int() || !d.is_int() || d.as_int() == 0) Fail("divisibleby expects non-zero integers");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "lower") return v.is_string() && ToLower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && ToUpper(v.as_string()) == v.as_string();
  if (name == "eq" || name == "equalto" || name == "==") return v.Equals(need_arg());
  if (name == "ne" || name == "!=") return !v.Equals(need_arg());
  if (name == "lt" || name == "lessthan" || name == "<") return BinaryOp("<", v, need_arg()).as_bool();
  if (name == "le" || name == "<=") return BinaryOp("<=", v, need_arg()).as_bool();
  if (name == "gt" || name == "greaterthan" || name == ">") return BinaryOp(">", v, need_arg()).as_bool();
  if (name == "ge" || name == ">=") return BinaryOp(">=", v, need_arg()).as_bool();
  if (name == "in") return BinaryOp("in", v, need_arg()).as_bool();
  if (name == "sameas") {
    const Value& o = need_arg();
    if (v.kind() != o.kind()) return false;
    return v.is_none() || v.is_undefined() || ((v.is_bool() || v.is_int()) && v.Equals(o));
  }
  if (name == "escaped") return false;
  Fail("unknown test '" + name + "'");
}

}  // namespace pagoda::jinja
