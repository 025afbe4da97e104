// Numbers and strings for the JSON Schema converter (json_schema_converter.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>

#include "sampling/grammar/json_schema_converter.h"
#include "sampling/grammar/json_schema_formats.h"
#include "sampling/grammar/json_schema_numbers.h"
#include "sampling/grammar/regex.h"

namespace pagoda::grammar::schema_internal {

Result<std::optional<double>> Converter::BoundValue(const Json& s, const char* key, const std::string& pointer) {
  if (!s.contains(key) || s[key].is_boolean()) return std::optional<double>();
  if (!s[key].is_number()) return Invalid(pointer, std::string("'") + key + "' must be a number");
  return std::optional<double>(s[key].get<double>());
}

Result<std::string> Converter::VisitNumber(const Json& s, const std::string& pointer, bool integer) {
  struct Side {
    std::optional<double> incl, excl;
  } low, high;
  for (auto [key, side, is_excl] : {std::tuple{"minimum", &low, false}, std::tuple{"exclusiveMinimum", &low, true},
                                    std::tuple{"maximum", &high, false}, std::tuple{"exclusiveMaximum", &high, true}}) {
    auto v = BoundValue(s, key, pointer);
    if (!v.ok()) return v.status();
    if (!*v) continue;
    (is_excl ? side->excl : side->incl) = **v;
  }
  // Draft 4: boolean exclusiveMinimum / exclusiveMaximum modify minimum / maximum.
  for (auto [key, side] : {std::pair{"exclusiveMinimum", &low}, std::pair{"exclusiveMaximum", &high}}) {
    if (s.contains(key) && s[key].is_boolean() && s[key].get<bool>() && side->incl) {
      side->excl = side->incl;
      side->incl.reset();
    }
  }
  if (integer && s.contains("format") && s["format"] == "int32") {
    low.incl = low.incl ? std::max(*low.incl, -2147483648.0) : -2147483648.0;
    high.incl = high.incl ? std::min(*high.incl, 2147483647.0) : 2147483647.0;
  }
  const bool bounded = low.incl || low.excl || high.incl || high.excl;
  if (!bounded) return Primitive(integer ? "integer" : "number");
  constexpr double kDrop = 1e19, kMax = static_cast<double>(kMaxBoundMagnitude);
  // Bounds beyond anything the grammar can produce are no constraint.
  for (auto* v : {&low.incl, &low.excl}) {
    if (*v && **v <= -kDrop) v->reset();
  }
  for (auto* v : {&high.incl, &high.excl}) {
    if (*v && **v >= kDrop) v->reset();
  }
  for (const auto* v : {&low.incl, &low.excl, &high.incl, &high.excl}) {
    if (*v && (std::fabs(**v) > kMax || !std::isfinite(**v))) {
      return InvalidArgument("numeric bound " + std::to_string(**v) + " at " + PathString(pointer) +
                             " is outside the supported range (+-1e18)");
    }
  }
  if (integer) {
    std::optional<int64_t> lo, hi;
    if (low.incl) lo = static_cast<int64_t>(std::ceil(*low.incl));
    if (low.excl) lo = std::max(lo.value_or(INT64_MIN), static_cast<int64_t>(std::floor(*low.excl)) + 1);
    if (high.incl) hi = static_cast<int64_t>(std::floor(*high.incl));
    if (high.excl) hi = std::min(hi.value_or(INT64_MAX), static_cast<int64_t>(std::ceil(*high.excl)) - 1);
    auto expr = IntegerRangeGbnf(lo, hi);
    if (!expr) return InvalidArgument("no integer satisfies the bounds at " + PathString(pointer));
    return AddRule("int", *expr);
  }
  for (const auto* v : {&low.incl, &low.excl, &high.incl, &high.excl}) {
    if (*v && std::floor(**v) != **v) {
      return InvalidArgument("a non-integer bound (" + std::to_string(**v) + ") on type number at " +
                             PathString(pointer) + " is not supported (integer bounds are)");
    }
  }
  auto pick = [](const Side& side, bool lower) -> std::optional<NumberBound> {
    if (!side.incl && !side.excl) return std::nullopt;
    if (!side.excl) return NumberBound{static_cast<int64_t>(*side.incl), false};
    if (!side.incl) return NumberBound{static_cast<int64_t>(*side.excl), true};
    // Both: the tighter one; at equal values the exclusive one.
    const bool excl_tighter = lower ? *side.excl >= *side.incl : *side.excl <= *side.incl;
    return excl_tighter ? NumberBound{static_cast<int64_t>(*side.excl), true}
                        : NumberBound{static_cast<int64_t>(*side.incl), false};
  };
  auto expr = NumberRangeGbnf(pick(low, true), pick(high, false));
  if (!expr) return InvalidArgument("no number satisfies the bounds at " + PathString(pointer));
  return AddRule("num", *expr);
}

Result<std::string> Converter::VisitString(const Json& s, const std::string& pointer, const std::string& hint) {
  auto min = Count(s, "minLength", pointer);
  if (!min.ok()) return min.status();
  auto max = Count(s, "maxLength", pointer);
  if (!max.ok()) return max.status();
  const bool has_length = min->has_value() || max->has_value();
  const std::string quote = GbnfLiteral("\"");
  if (min->value_or(0) > max->value_or(INT64_MAX)) return Invalid(pointer, "minLength > maxLength");
  if (s.contains("format")) {
    const Json& f = s["format"];
    if (!f.is_string()) return Invalid(pointer, "'format' must be a string");
    const std::string name = f.get<std::string>();
    if (name == "int32" || name == "int64") return Primitive("string");  // number formats
    if (s.contains("pattern") || has_length) {
      return InvalidArgument("'format' together with 'pattern' / 'minLength' / 'maxLength' at " +
                             PathString(pointer) + " is not supported");
    }
    auto rules = FormatRules(name, opts_.root_name);
    if (!rules) {
      return InvalidArgument("unsupported format '" + name + "' at " + PathString(pointer) +
                             " (supported: " + SupportedFormats() + ")");
    }
    for (const auto& [rule, body] : *rules) {
      if (defined_formats_.insert(rule).second) rules_.emplace_back(rule, body);
    }
    return AddRule(name, quote + " " + rules->front().first + " " + quote);
  }
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return Invalid(pointer, "'pattern' must be a string");
    if (has_length) {
      return InvalidArgument("'pattern' together with 'minLength' / 'maxLength' at " + PathString(pointer) +
                             " is not supported");
    }
    auto expr = RegexToGbnfExpression(s["pattern"].get<std::string>(), RegexMatchMode::kSearch,
                                      RegexTextMode::kJsonString);
    if (!expr.ok()) {
      return InvalidArgument("'pattern' at " + PathString(pointer) + ": " + expr.status().message());
    }
    return AddRule(hint.empty() ? "pattern" : hint, Seq({quote, *expr, quote}));
  }
  if (!has_length) return Primitive("string");
  return AddRule(hint.empty() ? "str" : hint,
                 Seq({quote, Repeat(Primitive("char"), min->value_or(0), *max), quote}));
}
}  // namespace pagoda::grammar::schema_internal
