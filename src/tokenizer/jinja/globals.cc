#include "tokenizer/jinja/globals.h"

#include <cmath>
#include <ctime>

#include "tokenizer/jinja/error.h"

namespace pagoda::jinja {
namespace {

constexpr int64_t kMaxRange = 1 << 20;

Value Range(const CallArgs& a) {
  for (const Value& v : a.positional) {
    if (!v.is_int()) throw JinjaError("range() arguments must be integers");
  }
  int64_t start = 0, stop = 0, step = 1;
  if (a.positional.size() == 1) {
    stop = a.positional[0].as_int();
  } else if (a.positional.size() == 2 || a.positional.size() == 3) {
    start = a.positional[0].as_int();
    stop = a.positional[1].as_int();
    if (a.positional.size() == 3) step = a.positional[2].as_int();
  } else {
    throw JinjaError("range() takes 1 to 3 arguments");
  }
  if (step == 0) throw JinjaError("range() step must not be zero");
  // Length first (in double: no overflow), so a huge range fails at once.
  const double span = step > 0 ? static_cast<double>(stop) - start : static_cast<double>(start) - stop;
  const double count = span <= 0 ? 0 : std::ceil(span / std::fabs(static_cast<double>(step)));
  if (count > kMaxRange) {
    throw JinjaError("range() longer than " + std::to_string(kMaxRange), StatusCode::kResourceExhausted);
  }
  List out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
  return Value(std::move(out));
}

// namespace(...) and dict(...): a mapping positional argument, then keywords.
Dict Entries(const CallArgs& a, const char* fn) {
  Dict d;
  auto put = [&d](const std::string& k, const Value& v) {
    for (auto& [key, old] : d) {
      if (key == k) {
        old = v;
        return;
      }
    }
    d.emplace_back(k, v);
  };
  if (a.positional.size() > 1) throw JinjaError(std::string(fn) + "() takes at most 1 positional argument");
  if (a.positional.size() == 1) {
    const Value& src = a.positional[0];
    if (src.is_dict() || src.is_namespace()) {
      for (const auto& [k, v] : src.as_dict()) put(k, v);
    } else if (src.is_list()) {
      for (const Value& pair : src.as_list()) {
        if (!pair.is_list() || pair.as_list().size() != 2 || !pair.as_list()[0].is_string()) {
          throw JinjaError(std::string(fn) + "(): expected (key, value) pairs");
        }
        put(pair.as_list()[0].as_string(), pair.as_list()[1]);
      }
    } else if (!src.is_undefined()) {
      throw JinjaError(std::string(fn) + "(): '" + src.TypeName() + "' object is not a mapping");
    }
  }
  for (const auto& [k, v] : a.keyword) put(k, v);
  return d;
}

}  // namespace

Dict GlobalFunctions(const RenderOptions& options) {
  Dict g;
  g.emplace_back("range", Value::Callable("range", Range));
  g.emplace_back("namespace", Value::Callable("namespace", [](const CallArgs& a) {
    return Value::Namespace(Entries(a, "namespace"));
  }));
  g.emplace_back("dict", Value::Callable("dict", [](const CallArgs& a) { return Value(Entries(a, "dict")); }));
  g.emplace_back("raise_exception", Value::Callable("raise_exception", [](const CallArgs& a) -> Value {
    throw JinjaError("template raised an exception: " + (a.positional.empty() ? std::string() : a.positional[0].Str()));
  }));
  std::function<std::tm()> now = options.now;
  g.emplace_back("strftime_now", Value::Callable("strftime_now", [now](const CallArgs& a) {
    const Value* fmt = a.Get(0, "format");
    if (fmt == nullptr || !fmt->is_string()) throw JinjaError("strftime_now() takes a format string");
    std::tm tm{};
    if (now) {
      tm = now();
    } else {
      const std::time_t t = std::time(nullptr);
      localtime_r(&t, &tm);
    }
    char buf[512];
    const size_t n = fmt->as_string().size() < 128 ? std::strftime(buf, sizeof(buf), fmt->as_string().c_str(), &tm) : 0;
    if (n == 0 && !fmt->as_string().empty()) throw JinjaError("strftime_now(): format too long or empty result");
    return Value(std::string(buf, n));
  }));
  return g;
}

}  // namespace pagoda::jinja
