// Built-in methods of str and dict that chat templates call:
// content.startswith('<tool_response>'), content.split('</think>')[-1],
// message.get('tool_calls'), tool.items().
#include <string_view>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/string_ops.h"

namespace pagoda::jinja {
namespace {

constexpr std::string_view kStringMethods[] = {"startswith", "endswith", "split",   "strip",   "lstrip",
                                               "rstrip",     "upper",    "lower",   "title",   "capitalize",
                                               "replace",    "find",     "count",   "join",    "splitlines"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values"};

[[noreturn]] void Fail(const std::string& what) { throw JinjaError(what); }

std::optional<std::string> OptString(const Value* v, const char* method) {
  if (v == nullptr || v->is_none() || v->is_undefined()) return std::nullopt;
  if (!v->is_string()) Fail(std::string(method) + "() argument must be a string or None");
  return v->as_string();
}

int64_t IntArg(const Value* v, int64_t fallback, const char* method) {
  if (v == nullptr || v->is_none() || v->is_undefined()) return fallback;
  if (!v->is_int() && !v->is_bool()) Fail(std::string(method) + "() argument must be an integer");
  return v->is_int() ? v->as_int() : v->as_bool();
}

// startswith/endswith accept a string or a tuple of strings.
bool AffixMatch(const std::string& s, const Value* arg, bool prefix, const char* method) {
  if (arg == nullptr) Fail(std::string(method) + "() takes at least 1 argument");
  auto one = [&](const Value& v) {
    if (!v.is_string()) Fail(std::string(method) + "() argument must be a string or tuple of strings");
    const std::string& a = v.as_string();
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (arg->is_list()) {
    for (const Value& v : arg->as_list()) {
      if (one(v)) return true;
    }
    return false;
  }
  return one(*arg);
}

Value StringMethod(const std::string& s, const std::string& name, const CallArgs& args) {
  if (name == "startswith" || name == "endswith") {
    return Value(AffixMatch(s, args.Get(0, "prefix"), name == "startswith", name.c_str()));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto chars = OptString(args.Get(0, "chars"), name.c_str());
    return Value(Strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split") {
    const auto sep = OptString(args.Get(0, "sep"), "split");
    if (sep && sep->empty()) Fail("split(): empty separator");
    List out;
    for (auto& part : Split(s, sep, IntArg(args.Get(1, "maxsplit"), -1, "split"))) out.emplace_back(std::move(part));
    return Value(std::move(out));
  }
  if (name == "splitlines") {
    List out;
    for (auto& part : Split(s, std::string("\n"), -1)) {
      if (!part.empty() && part.back() == '\r') part.pop_back();
      out.emplace_back(std::move(part));
    }
    if (!s.empty() && s.back() == '\n') out = List(out.begin(), out.end() - 1);
    if (s.empty()) out.clear();
    return Value(std::move(out));
  }
  if (name == "upper") return Value(ToUpper(s));
  if (name == "lower") return Value(ToLower(s));
  if (name == "title") return Value(ToTitle(s));
  if (name == "capitalize") return Value(Capitalize(s));
  if (name == "replace") {
    const Value* from = args.Get(0, "old");
    const Value* to = args.Get(1, "new");
    if (from == nullptr || to == nullptr || !from->is_string() || !to->is_string()) {
      Fail("replace() takes two string arguments");
    }
    return Value(Replace(s, from->as_string(), to->as_string(), IntArg(args.Get(2, "count"), -1, "replace")));
  }
  if (name == "find" || name == "count") {
    const Value* sub = args.Get(0, "sub");
    if (sub == nullptr || !sub->is_string()) Fail(name + "() argument must be a string");
    if (name == "find") {
      const size_t hit = s.find(sub->as_string());
      return Value(hit == std::string::npos ? int64_t{-1}
                                            : static_cast<int64_t>(CodePointCount(std::string_view(s).substr(0, hit))));
    }
    if (sub->as_string().empty()) return Value(static_cast<int64_t>(CodePointCount(s) + 1));
    int64_t n = 0;
    for (size_t p = s.find(sub->as_string()); p != std::string::npos; p = s.find(sub->as_string(), p + sub->as_string().size())) ++n;
    return Value(n);
  }
  // join
  const Value* items = args.Get(0, "iterable");
  if (items == nullptr) Fail("join() takes exactly one argument");
  std::string out;
  const List parts = Iterate(*items);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].is_string()) Fail("join(): sequence item " + std::to_string(i) + ": expected str");
    if (i > 0) out += s;
    out += parts[i].as_string();
  }
  return Value(std::move(out));
}

Value DictMethod(const Value& d, const std::string& name, const CallArgs& args) {
  if (name == "get") {
    const Value* key = args.Get(0, "key");
    if (key == nullptr) Fail("get() takes at least 1 argument");
    const Value* hit = key->is_string() ? d.Find(key->as_string()) : nullptr;
    if (hit != nullptr) return *hit;
    const Value* fallback = args.Get(1, "default");
    return fallback != nullptr ? *fallback : Value::None();
  }
  List out;
  for (const auto& [k, v] : d.as_dict()) {
    if (name == "items") {
      out.emplace_back(List{Value(k), v});
    } else if (name == "keys") {
      out.emplace_back(k);
    } else {
      out.push_back(v);
    }
  }
  return Value(std::move(out));
}

}  // namespace

bool HasMethod(const Value& object, const std::string& name) {
  if (object.is_string()) {
    for (auto m : kStringMethods) {
      if (m == name) return true;
    }
  } else if (object.is_dict()) {
    for (auto m : kDictMethods) {
      if (m == name) return true;
    }
  }
  return false;
}

std::optional<Value> CallMethod(const Value& object, const std::string& name, const CallArgs& args) {
  if (!HasMethod(object, name)) return std::nullopt;
  if (object.is_string()) return StringMethod(object.as_string(), name, args);
  return DictMethod(object, name, args);
}

}  // namespace pagoda::jinja
