// Python's operators on Values: arithmetic, comparison, membership,
// subscripts and slices, iteration.
#include <cmath>
#include <string>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"

namespace pagoda::jinja {
namespace {

[[noreturn]] void Unsupported(const std::string& op, const Value& a, const Value& b) {
  throw JinjaError("unsupported operand types for " + op + ": '" + a.TypeName() + "' and '" + b.TypeName() + "'");
}

bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t IntOf(const Value& v) { return v.is_int() ? v.as_int() : v.as_bool(); }
bool IsNum(const Value& v) { return v.is_number() || v.is_bool(); }

Value Arith(const std::string& op, const Value& a, const Value& b) {
  if (IsIntLike(a) && IsIntLike(b) && op != "/" && op != "**") {
    const int64_t x = IntOf(a), y = IntOf(b);
    int64_t r = 0;
    bool overflow = false;
    if (op == "+") {
      overflow = __builtin_add_overflow(x, y, &r);
    } else if (op == "-") {
      overflow = __builtin_sub_overflow(x, y, &r);
    } else if (op == "*") {
      overflow = __builtin_mul_overflow(x, y, &r);
    } else {
      if (y == 0) throw JinjaError("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) throw JinjaError("integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors
        --q;
        m += y;
      }
      r = op == "//" ? q : m;
    }
    if (overflow) throw JinjaError("integer overflow in " + op);
    return Value(r);
  }
  const double x = a.as_number(), y = b.as_number();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "**") {
    if (x == 0 && y < 0) throw JinjaError("0 cannot be raised to a negative power");
    const double r = std::pow(x, y);
    if (IsIntLike(a) && IsIntLike(b) && y >= 0) {
      if (!(std::fabs(r) < 9.2e18)) throw JinjaError("integer overflow in **");
      return Value(static_cast<int64_t>(r));
    }
    return Value(r);
  }
  if (y == 0) throw JinjaError("division by zero");
  if (op == "/") return Value(x / y);
  if (op == "//") return Value(std::floor(x / y));
  const double m = std::fmod(x, y);
  return Value(m != 0 && ((m < 0) != (y < 0)) ? m + y : m);
}

// "ab" * 3, [1] * 3.
Value Repeat(const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value(std::string()) : Value(List{});
  if (seq.is_string()) {
    if (seq.as_string().size() * static_cast<uint64_t>(n) > (64u << 20)) throw JinjaError("string repetition too large");
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  if (seq.as_list().size() * static_cast<uint64_t>(n) > (1u << 20)) throw JinjaError("list repetition too large");
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return Value(std::move(out));
}

int Compare(const std::string& op, const Value& a, const Value& b) {
  if (IsNum(a) && IsNum(b)) {
    if (IsIntLike(a) && IsIntLike(b)) return IntOf(a) < IntOf(b) ? -1 : IntOf(a) > IntOf(b) ? 1 : 0;
    return a.as_number() < b.as_number() ? -1 : a.as_number() > b.as_number() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
  if (a.is_list() && b.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!x[i].Equals(y[i])) return Compare(op, x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  throw JinjaError("'" + op + "' not supported between '" + a.TypeName() + "' and '" + b.TypeName() + "'");
}

bool Contains(const Value& container, const Value& item) {
  if (container.is_undefined()) return false;
  if (container.is_string()) {
    if (!item.is_string()) throw JinjaError("'in <string>' requires a string on the left, not '" + std::string(item.TypeName()) + "'");
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& v : container.as_list()) {
      if (v.Equals(item)) return true;
    }
    return false;
  }
  if (container.is_dict() || container.is_namespace()) {
    return item.is_string() && container.Find(item.as_string()) != nullptr;
  }
  throw JinjaError("argument of type '" + std::string(container.TypeName()) + "' is not iterable");
}

// Python's slice.indices: clamps start/stop for the step's direction.
void SliceIndices(int64_t len, const Value& start, const Value& stop, int64_t step, int64_t* b, int64_t* e) {
  auto get = [&](const Value& v, int64_t dflt) -> int64_t {
    if (v.is_undefined() || v.is_none()) return dflt;
    if (!IsIntLike(v)) throw JinjaError("slice indices must be integers or None");
    int64_t i = IntOf(v);
    if (i < 0) {
      i += len;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= len) {
      i = step < 0 ? len - 1 : len;
    }
    return i;
  };
  *b = get(start, step < 0 ? len - 1 : 0);
  *e = get(stop, step < 0 ? -1 : len);
}

}  // namespace

Value BinaryOp(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Value(a.Equals(b));
  if (op == "!=") return Value(!a.Equals(b));
  if (op == "~") return Value(a.Str() + b.Str());
  if (op == "in") return Value(Contains(b, a));
  if (op == "not in") return Value(!Contains(b, a));
  if (op == "<") return Value(Compare(op, a, b) < 0);
  if (op == ">") return Value(Compare(op, a, b) > 0);
  if (op == "<=") return Value(Compare(op, a, b) <= 0);
  if (op == ">=") return Value(Compare(op, a, b) >= 0);
  if (IsNum(a) && IsNum(b)) return Arith(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list()) {
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && IsIntLike(b)) return Repeat(a, IntOf(b));
    if ((b.is_string() || b.is_list()) && IsIntLike(a)) return Repeat(b, IntOf(a));
  }
  Unsupported(op, a, b);
}

Value GetItem(const Value& obj, const Value& index) {
  if (obj.is_dict() || obj.is_namespace()) {
    if (!index.is_string()) return Value();
    const Value* v = obj.Find(index.as_string());
    return v != nullptr ? *v : Value();
  }
  if ((obj.is_list() || obj.is_string()) && IsIntLike(index)) {
    int64_t i = IntOf(index);
    if (obj.is_list()) {
      const int64_t n = static_cast<int64_t>(obj.as_list().size());
      if (i < 0) i += n;
      return i >= 0 && i < n ? obj.as_list()[i] : Value();
    }
    const std::vector<std::string> cps = SplitCodePoints(obj.as_string());
    const int64_t n = static_cast<int64_t>(cps.size());
    if (i < 0) i += n;
    return i >= 0 && i < n ? Value(cps[i]) : Value();
  }
  return Value();  // as @huggingface/jinja: a missing item is undefined, not an error
}

Value Slice(const Value& obj, const Value& start, const Value& stop, const Value& step_v) {
  int64_t step = 1;
  if (!step_v.is_undefined() && !step_v.is_none()) {
    if (!IsIntLike(step_v)) throw JinjaError("slice indices must be integers or None");
    step = IntOf(step_v);
  }
  if (step == 0) throw JinjaError("slice step cannot be zero");
  if (obj.is_list()) {
    const List& l = obj.as_list();
    int64_t b, e;
    SliceIndices(static_cast<int64_t>(l.size()), start, stop, step, &b, &e);
    List out;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(l[i]);
    return Value(std::move(out));
  }
  if (obj.is_string()) {
    const std::vector<std::string> cps = SplitCodePoints(obj.as_string());
    int64_t b, e;
    SliceIndices(static_cast<int64_t>(cps.size()), start, stop, step, &b, &e);
    std::string out;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out += cps[i];
    return Value(std::move(out));
  }
  if (obj.is_undefined()) return Value();
  throw JinjaError(std::string("'") + obj.TypeName() + "' object is not subscriptable");
}

List Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return v.as_list();
    case Value::Kind::kDict: {
      List keys;
      for (const auto& [k, unused] : v.as_dict()) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      List chars;
      for (auto& c : SplitCodePoints(v.as_string())) chars.emplace_back(std::move(c));
      return chars;
    }
    default: throw JinjaError(std::string("'") + v.TypeName() + "' object is not iterable");
  }
}

}  // namespace pagoda::jinja
