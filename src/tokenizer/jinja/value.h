// Value: what a Jinja expression evaluates to. Python's data model, reduced to
// what chat templates use: undefined, None, bool, int, float, str, list, dict
// (insertion-ordered, as Python's), namespace (the one mutable object) and
// callables (macros, globals such as range, bound string/dict methods).
//
// Values are cheap to copy: strings, lists and dicts are shared immutable
// buffers. A Value lives no longer than the Render call that made it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagoda::jinja {

class Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // insertion order

// Arguments of a call: f(a, b, key=c).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index`, else the keyword `name`, else nullptr.
  const Value* Get(size_t index, std::string_view name) const;
};

using Function = std::function<Value(const CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

  Value() = default;  // undefined
  static Value None();
  Value(bool b);                    // NOLINT: implicit, like the Python literal
  Value(int64_t i);                 // NOLINT
  Value(int i) : Value(int64_t{i}) {}  // NOLINT
  Value(double f);                  // NOLINT
  Value(std::string s);             // NOLINT
  Value(const char* s) : Value(std::string(s)) {}  // NOLINT
  Value(List list);                 // NOLINT
  Value(Dict dict);                 // NOLINT
  static Value Namespace(Dict attrs);
  static Value Callable(std::string name, Function fn);
  // JSON to Value: objects keep their key order.
  static Value FromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_float() const { return f_; }
  // int, float or bool as a double.
  double as_number() const;
  const std::string& as_string() const { return *str_; }
  const List& as_list() const { return *list_; }
  // A dict's or a namespace's entries.
  const Dict& as_dict() const { return *dict_; }
  const std::string& callable_name() const { return fn_->first; }
  const Function& function() const { return fn_->second; }

  // dict/namespace lookup; nullptr when absent.
  const Value* Find(std::string_view key) const;
  // Namespace attribute assignment (the only mutation Jinja allows).
  void SetAttr(const std::string& key, Value v) const;

  // Python truthiness: undefined, None, False, 0, "", [] and {} are false.
  bool Truthy() const;
  // str(value) as Jinja prints it: undefined prints as "", None as "None",
  // booleans as "True"/"False", containers as Python's repr.
  std::string Str() const;
  // repr(value): strings quoted.
  std::string Repr() const;
  // Python ==: deep, with 1 == 1.0 == True.
  bool Equals(const Value& other) const;
  const char* TypeName() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> str_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;  // mutable only through SetAttr on a namespace
  std::shared_ptr<const std::pair<std::string, Function>> fn_;
};

// Python's repr of a float: shortest round-trip digits, "1.0" not "1".
std::string FormatFloat(double f);

// Number of Unicode code points in UTF-8 `s` (Python's len).
size_t CodePointCount(std::string_view s);
// `s` split into code points, each as its UTF-8 bytes.
std::vector<std::string> SplitCodePoints(std::string_view s);

}  // namespace pagoda::jinja
