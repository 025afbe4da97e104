// Arrays and objects for the JSON Schema converter (json_schema_converter.h).
#include <algorithm>
#include <cstdint>
#include <functional>

#include "sampling/grammar/json_schema_converter.h"

namespace pagoda::grammar::schema_internal {

Result<Converter::ArrayShape> Converter::ArrayItems(const Json& s, const std::string& pointer) {
  ArrayShape shape;
  if (s.contains("prefixItems")) {
    const Json& p = s["prefixItems"];
    if (!p.is_array()) return Invalid(pointer, "'prefixItems' must be an array");
    if (s.contains("items") && s["items"].is_array()) {
      return Invalid(pointer, "array-form 'items' together with 'prefixItems'");
    }
    for (size_t i = 0; i < p.size(); ++i) {
      shape.prefix.push_back({&p[i], PathJoin(PathJoin(pointer, "prefixItems"), std::to_string(i))});
    }
  }
  if (s.contains("items")) {
    const Json& it = s["items"];
    if (it.is_array()) {  // draft 7 tuple form
      for (size_t i = 0; i < it.size(); ++i) {
        shape.prefix.push_back({&it[i], PathJoin(PathJoin(pointer, "items"), std::to_string(i))});
      }
      if (s.contains("additionalItems")) {
        shape.rest = &s["additionalItems"];
        shape.rest_pointer = PathJoin(pointer, "additionalItems");
      }
    } else {
      shape.rest = &it;
      shape.rest_pointer = PathJoin(pointer, "items");
    }
  }
  if (shape.rest && shape.rest->is_boolean()) {
    shape.rest_allowed = shape.rest->get<bool>();
    shape.rest = nullptr;
  }
  if (shape.rest && !shape.rest->is_object()) {
    return Invalid(shape.rest_pointer, "a schema must be an object or a boolean");
  }
  return shape;
}

Result<std::string> Converter::VisitArray(const Json& s, const std::string& pointer, const std::string& hint, int depth) {
  auto min = Count(s, "minItems", pointer);
  if (!min.ok()) return min.status();
  auto max = Count(s, "maxItems", pointer);
  if (!max.ok()) return max.status();
  const int64_t lo = min->value_or(0);
  std::optional<int64_t> hi = *max;
  if (hi && lo > *hi) return Invalid(pointer, "minItems > maxItems");
  auto shape = ArrayItems(s, pointer);
  if (!shape.ok()) return shape.status();
  const auto& prefix = shape->prefix;
  const Json* rest = shape->rest;
  const std::string& rest_pointer = shape->rest_pointer;
  bool rest_allowed = shape->rest_allowed;
  size_t k = prefix.size();
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (prefix[i].first->is_boolean() && !prefix[i].first->get<bool>()) {  // no item may stand here
      k = i;
      rest_allowed = false;
      break;
    }
  }
  if (!rest_allowed) hi = std::min<int64_t>(hi.value_or(INT64_MAX), static_cast<int64_t>(k));
  if (hi && lo > *hi) return InvalidArgument("minItems at " + PathString(pointer) + " cannot be met: items are limited to " + std::to_string(*hi));
  if (hi) k = std::min<size_t>(k, static_cast<size_t>(*hi));
  const std::string item_hint = (hint.empty() ? "" : hint + "-") + "item";
  std::vector<std::string> p;
  for (size_t i = 0; i < k; ++i) {
    auto e = Visit(*prefix[i].first, prefix[i].second, item_hint, depth + 1);
    if (!e.ok()) return e.status();
    p.push_back(*e);
  }
  std::string r;
  if (rest_allowed && (!hi || *hi > static_cast<int64_t>(k))) {
    if (rest) {
      auto e = Visit(*rest, rest_pointer, item_hint, depth + 1);
      if (!e.ok()) return e.status();
      r = *e;
    } else {
      r = Primitive("value");
    }
  }
  if ((hi && *hi == 0) || (k == 0 && r.empty())) return GbnfLiteral("[]");
  const std::string comma = Seq({GbnfLiteral(","), Primitive("sp")});
  // Items from position i on, i >= 1 already written.
  std::function<std::string(int64_t)> tail = [&](int64_t i) -> std::string {
    if (hi && i >= *hi) return "";
    if (i < static_cast<int64_t>(k)) {
      const std::string body = Seq({comma, p[i], tail(i + 1)});
      return i < lo ? body : Paren(body) + "?";
    }
    if (r.empty()) return "";
    std::optional<int64_t> more;
    if (hi) more = *hi - i;
    return Repeat(Paren(Seq({comma, r})), std::max<int64_t>(0, lo - i), more);
  };
  std::string content = Seq({k > 0 ? p[0] : r, tail(1)});
  if (lo == 0) content = Paren(content) + "?";
  return AddRule(hint.empty() ? "array" : hint, Seq({GbnfLiteral("["), content, GbnfLiteral("]")}));
}

Result<std::string> Converter::VisitObject(const Json& s, const std::string& pointer, const std::string& hint, int depth) {
  if (s.contains("properties") && !s["properties"].is_object()) return Invalid(pointer, "'properties' must be an object");
  std::vector<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return Invalid(pointer, "'required' must be an array of strings");
    for (const auto& r : s["required"]) {
      if (!r.is_string()) return Invalid(pointer, "'required' must be an array of strings");
      if (std::find(required.begin(), required.end(), r.get<std::string>()) == required.end()) {
        required.push_back(r.get<std::string>());
      }
    }
  }
  const Json addl = s.contains("additionalProperties") ? s["additionalProperties"] : Json(!opts_.strict);
  if (!addl.is_boolean() && !addl.is_object()) {
    return Invalid(pointer, "'additionalProperties' must be a boolean or a schema");
  }
  const bool addl_allowed = !addl.is_boolean() || addl.get<bool>();
  auto is_required = [&](const std::string& n) {
    return std::find(required.begin(), required.end(), n) != required.end();
  };
  const std::string sp = Primitive("sp");
  const std::string colon = GbnfLiteral(":");
  std::vector<Member> props;
  std::vector<std::string> declared;
  if (s.contains("properties")) {
    for (const auto& [name, sub] : s["properties"].items()) {
      declared.push_back(name);
      const std::string p = PathJoin(PathJoin(pointer, "properties"), name);
      if (sub.is_boolean() && !sub.get<bool>()) {
        if (is_required(name)) {
          return InvalidArgument("required property '" + name + "' at " + PathString(p) + " has schema false");
        }
        continue;
      }
      auto e = Visit(sub, p, name, depth + 1);
      if (!e.ok()) return e.status();
      props.push_back({Seq({GbnfLiteral(Json(name).dump()), colon, sp, *e}), is_required(name)});
    }
  }
  std::string addl_value;
  if (addl_allowed) {
    if (addl.is_object()) {
      auto e = Visit(addl, PathJoin(pointer, "additionalProperties"), (hint.empty() ? "" : hint + "-") + "extra", depth + 1);
      if (!e.ok()) return e.status();
      addl_value = *e;
    } else {
      addl_value = Primitive("value");
    }
  }
  for (const auto& name : required) {
    if (std::find(declared.begin(), declared.end(), name) != declared.end()) continue;
    if (!addl_allowed) {
      return InvalidArgument("required property '" + name + "' at " + PathString(pointer) +
                             " is not in 'properties' and additionalProperties is false");
    }
    declared.push_back(name);
    props.push_back({Seq({GbnfLiteral(Json(name).dump()), colon, sp, addl_value}), true});
  }
  std::string extra_kv;
  if (addl_allowed) extra_kv = Seq({KeyExcluding(declared, hint), colon, sp, addl_value});
  return ObjectBody(props, extra_kv, hint);
}

std::string Converter::ObjectBody(const std::vector<Member>& props, const std::string& extra_kv,
                                  const std::string& hint) {
  const std::string comma = Seq({GbnfLiteral(","), Primitive("sp")});
  const std::string extras = extra_kv.empty() ? "" : Paren(Seq({comma, extra_kv})) + "*";
  const size_t n = props.size();
  size_t first_required = n;
  for (size_t i = 0; i < n; ++i) {
    if (props[i].required) {
      first_required = i;
      break;
    }
  }
  // tail[j]: properties j.. and the extras, after something was written.
  // Several start points share them, so they become rules then.
  const size_t last_start = first_required < n ? first_required : (n == 0 ? 0 : n - 1);
  const bool shared_tails = last_start > 0;
  std::vector<std::string> tail(n + 1);
  tail[n] = extras;
  for (size_t j = n; j-- > 1;) {
    std::string piece = Seq({comma, props[j].kv});
    if (!props[j].required) piece = Paren(piece) + "?";
    const std::string body = Seq({piece, tail[j + 1]});
    tail[j] = shared_tails ? AddRule((hint.empty() ? "" : hint + "-") + "rest", body) : body;
  }
  std::vector<std::string> alts;
  for (size_t f = 0; f < n && f <= last_start; ++f) alts.push_back(Seq({props[f].kv, tail[f + 1]}));
  const bool all_optional = first_required == n;
  if (all_optional && !extra_kv.empty()) alts.push_back(Seq({extra_kv, extras}));
  if (alts.empty()) return GbnfLiteral("{}");
  std::string content = Paren(Alternatives(alts));
  if (all_optional) content += "?";
  return AddRule(hint.empty() ? "object" : hint, Seq({GbnfLiteral("{"), content, GbnfLiteral("}")}));
}

// A trie of the names where each node may end (unless a name ends there), go
// on along the trie, or leave it for any other key character.
std::string Converter::KeyExcluding(const std::vector<std::string>& names, const std::string& hint) {
  const std::string quote = GbnfLiteral("\"");
  const std::string rest = Primitive("key-char") + "*";
  struct Node {
    bool terminal = false;
    std::map<char32_t, int> kids;
  };
  std::vector<Node> trie(1);
  for (const auto& name : names) {
    std::u32string cps;
    if (!DecodeUtf8(name, &cps)) continue;  // our keys are valid UTF-8: never equal
    int at = 0;
    for (char32_t c : cps) {
      auto it = trie[at].kids.find(c);
      if (it == trie[at].kids.end()) {
        trie.push_back({});
        it = trie[at].kids.emplace(c, static_cast<int>(trie.size()) - 1).first;
      }
      at = it->second;
    }
    trie[at].terminal = true;
  }
  const CodePointSet key_chars = KeyChars();
  std::function<std::string(int)> node_rule = [&](int i) -> std::string {
    std::vector<std::string> alts;
    if (!trie[i].terminal) alts.push_back(quote);
    CodePointSet others = key_chars;
    for (const auto& [c, kid] : trie[i].kids) {
      if (!key_chars.Contains(c)) continue;
      others = others.Minus(CodePointSet::Of(c));
      std::string ch;
      AppendCodePointUtf8(c, &ch);
      alts.push_back(Seq({GbnfLiteral(ch), node_rule(kid)}));
    }
    if (!others.empty()) alts.push_back(Seq({others.ToGbnf(), rest, quote}));
    return AddRule((hint.empty() ? "" : hint + "-") + "key", Alternatives(alts));
  };
  return Seq({quote, node_rule(0)});
}
}  // namespace pagoda::grammar::schema_internal
