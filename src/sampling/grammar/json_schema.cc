#include "sampling/grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "sampling/grammar/json_schema_converter.h"
#include "sampling/grammar/json_schema_formats.h"
#include "sampling/grammar/json_schema_numbers.h"
#include "sampling/grammar/regex_charset.h"

namespace pagoda::grammar {
namespace schema_internal {

namespace {

const char* const kTypes[] = {"null", "boolean", "object", "array", "number", "integer", "string"};

bool ValidRuleName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

std::string Sanitize(const std::string& hint) {
  std::string out;
  for (char c : hint) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (ok) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > 40) out.resize(40);
  return out.empty() ? "item" : out;
}

}  // namespace

Status Invalid(const std::string& pointer, const std::string& what) {
  return InvalidArgument("invalid JSON Schema at " + PathString(pointer) + ": " + what);
}

std::string Alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

std::string Paren(const std::string& expr) { return "(" + expr + ")"; }

std::string Repeat(const std::string& x, int64_t min, std::optional<int64_t> max) {
  if (max && *max == 0) return "";
  if (!max) {
    if (min == 0) return x + "*";
    if (min == 1) return x + "+";
    return x + "{" + std::to_string(min) + ",}";
  }
  if (min == 1 && *max == 1) return x;
  if (min == 0 && *max == 1) return x + "?";
  if (min == *max) return x + "{" + std::to_string(min) + "}";
  return x + "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
}

std::string Seq(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += ' ';
    out += p;
  }
  return out;
}

Result<std::optional<int64_t>> Count(const Json& s, const char* key, const std::string& pointer) {
  if (!s.contains(key)) return std::optional<int64_t>();
  const Json& v = s[key];
  if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>()) {
    return Invalid(pointer, std::string("'") + key + "' must be a non-negative integer");
  }
  const double d = v.get<double>();
  if (d > static_cast<double>(kMaxCount)) {
    // A larger maximum is lowered to the limit: fewer outputs, all valid.
    if (std::string(key).rfind("max", 0) == 0) return std::optional<int64_t>(kMaxCount);
    return InvalidArgument(std::string("'") + key + "' above " + std::to_string(kMaxCount) +
                           " is not supported at " + PathString(pointer));
  }
  return std::optional<int64_t>(static_cast<int64_t>(d));
}

Converter::Converter(const Json& root, const JsonSchemaOptions& opts) : root_(root), opts_(opts) {
  for (const char* p : {"sp", "char", "string", "integer", "number", "boolean", "null", "value",
                        "object", "array", "key", "key-char"}) {
    names_.insert(Prefixed(p));
  }
  // The format rules' names too, so a property named "email" cannot take one.
  for (const char* f : {"date", "time", "date-time", "uuid", "email"}) {
    const auto rules = FormatRules(f, opts_.root_name);
    for (const auto& [name, body] : *rules) names_.insert(name);
  }
}

Result<std::string> Converter::Run() {
  if (!ValidRuleName(opts_.root_name)) {
    return InvalidArgument("JSON Schema grammar: root name '" + opts_.root_name +
                           "' must match [a-zA-Z0-9-]+");
  }
  names_.insert(opts_.root_name);
  auto expr = Visit(root_, "", "", 0);
  if (!expr.ok()) return expr.status();
  std::string out = opts_.root_name + " ::= " + *expr + "\n";
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

std::string Converter::NewName(const std::string& hint) {
  std::string base = Prefixed(Sanitize(hint));
  std::string name = base;
  for (int i = 1; names_.count(name); ++i) name = base + "-" + std::to_string(i);
  names_.insert(name);
  return name;
}

std::string Converter::AddRule(const std::string& hint, const std::string& body) {
  auto it = body_names_.find(body);
  if (it != body_names_.end()) return it->second;
  const std::string name = NewName(hint);
  rules_.emplace_back(name, body);
  body_names_[body] = name;
  return name;
}

std::string Converter::Primitive(const std::string& which) {
  const std::string name = Prefixed(which);
  if (defined_primitives_.insert(which).second) {
    std::string body;
    const std::string sp = Prefixed("sp");
    if (which == "sp") {
      body = "\" \"?";
    } else if (which == "char") {
      CodePointSet raw = CodePointSet::All().Minus(CodePointSet::Range(0, 0x1F));
      raw = raw.Minus(CodePointSet::Of('"')).Minus(CodePointSet::Of('\\'));
      // \uXXXX escapes exclude surrogates, so each char is one code point
      // (minLength / maxLength count code points).
      body = raw.ToGbnf() + " | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}))";
    } else if (which == "string") {
      body = "\"\\\"\" " + Primitive("char") + "* \"\\\"\"";
    } else if (which == "integer") {
      body = "\"-\"? (\"0\" | [1-9] [0-9]{0," + std::to_string(kMaxIntegerDigits - 1) + "})";
    } else if (which == "number") {
      body = Primitive("integer") + " (\".\" [0-9]{1," + std::to_string(kMaxIntegerDigits) +
             "})? ([eE] [+\\x2D]? [0-9]{1,2})?";
    } else if (which == "boolean") {
      body = "\"true\" | \"false\"";
    } else if (which == "null") {
      body = "\"null\"";
    } else if (which == "value") {
      body = Primitive("object") + " | " + Primitive("array") + " | " + Primitive("string") + " | " +
             Primitive("number") + " | " + Primitive("boolean") + " | " + Primitive("null");
    } else if (which == "object") {
      const std::string kv = Primitive("string") + " \":\" " + sp + " " + Primitive("value");
      body = "\"{\" (" + kv + " (\",\" " + sp + " " + kv + ")*)? \"}\"";
    } else if (which == "array") {
      const std::string v = Primitive("value");
      body = "\"[\" (" + v + " (\",\" " + sp + " " + v + ")*)? \"]\"";
    } else if (which == "key-char") {
      body = KeyChars().ToGbnf();
    }
    if (which == "value") Primitive("sp");
    rules_.emplace_back(name, body);
  }
  return name;
}

CodePointSet Converter::KeyChars() {
  return CodePointSet::All().Minus(CodePointSet::Range(0, 0x1F)).Minus(CodePointSet::Of('"')).Minus(
      CodePointSet::Of('\\'));
}

Result<const Json*> Converter::Resolve(const std::string& ref, const std::string& pointer) {
  if (ref.empty() || ref[0] != '#') {
    return InvalidArgument("remote $ref '" + ref + "' at " + PathString(pointer) +
                           " is not supported (only '#...' references within the schema)");
  }
  const Json* cur = &root_;
  if (ref.size() == 1) return cur;
  if (ref[1] != '/') {
    return InvalidArgument("$ref '" + ref + "' at " + PathString(pointer) +
                           ": anchors are not supported, use a JSON pointer such as #/$defs/name");
  }
  size_t pos = 2;
  while (true) {
    const size_t end = ref.find('/', pos);
    std::string raw = ref.substr(pos, end == std::string::npos ? std::string::npos : end - pos), seg;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        seg += raw[++i] == '0' ? '~' : '/';
      } else if (raw[i] == '%' && i + 2 < raw.size() && std::isxdigit(static_cast<unsigned char>(raw[i + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(raw[i + 2]))) {
        seg += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        seg += raw[i];
      }
    }
    if (cur->is_object() && cur->contains(seg)) {
      cur = &(*cur)[seg];
    } else if (cur->is_array() && !seg.empty() && seg.find_first_not_of("0123456789") == std::string::npos &&
               std::stoul(seg) < cur->size()) {
      cur = &(*cur)[std::stoul(seg)];
    } else {
      return InvalidArgument("unresolvable $ref '" + ref + "' at " + PathString(pointer));
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return cur;
}

Result<Json> Converter::Flatten(const Json& s, const std::string& pointer, int depth) {
  if (depth > kMaxMergeDepth) {
    return InvalidArgument("allOf / $ref nesting too deep at " + PathString(pointer) +
                           " (a recursive $ref inside allOf cannot be merged)");
  }
  if (s.is_boolean()) return s;
  if (!s.is_object()) return Invalid(pointer, "a schema must be an object or a boolean");
  PAGODA_RETURN_IF_ERROR(CheckKeywords(s, pointer));
  // Parts in the order their properties are written: the $ref target, the
  // allOf branches, then the schema's own keywords.
  Json own = Json::object();
  for (const auto& [k, v] : s.items()) {
    if (k != "allOf" && k != "$ref") own[k] = v;
  }
  Json acc = Json::object();
  if (s.contains("$ref")) {
    if (!s["$ref"].is_string()) return Invalid(pointer, "'$ref' must be a string");
    const std::string ref = s["$ref"].get<std::string>();
    auto target = Resolve(ref, pointer);
    if (!target.ok()) return target.status();
    auto flat = Flatten(**target, ref.substr(1), depth + 1);
    if (!flat.ok()) return flat.status();
    acc = std::move(*flat);
  }
  if (s.contains("allOf")) {
    const Json& all = s["allOf"];
    if (!all.is_array() || all.empty()) return Invalid(pointer, "'allOf' must be a non-empty array");
    for (size_t i = 0; i < all.size(); ++i) {
      const std::string p = PathJoin(PathJoin(pointer, "allOf"), std::to_string(i));
      auto flat = Flatten(all[i], p, depth + 1);
      if (!flat.ok()) return flat.status();
      auto merged = MergeSchemas(acc, *flat, p);
      if (!merged.ok()) return merged.status();
      acc = std::move(*merged);
    }
  }
  auto merged = MergeSchemas(acc, own, pointer);
  if (!merged.ok()) return merged.status();
  acc = std::move(*merged);
  return acc;
}

Result<std::string> Converter::RefRule(const std::string& ref, const std::string& pointer, int depth) {
  auto it = ref_names_.find(ref);
  if (it != ref_names_.end()) return it->second;
  auto target = Resolve(ref, pointer);
  if (!target.ok()) return target.status();
  // A chain of bare $refs that comes back to itself never reaches a schema.
  std::set<const Json*> seen;
  for (const Json* t = *target; t->is_object() && t->size() == 1 && t->contains("$ref") && (*t)["$ref"].is_string();) {
    if (!seen.insert(t).second) {
      return InvalidArgument("$ref cycle through '" + ref + "' at " + PathString(pointer) +
                             " never reaches a schema");
    }
    auto next = Resolve((*t)["$ref"].get<std::string>(), pointer);
    if (!next.ok()) return next.status();
    t = *next;
  }
  const size_t slash = ref.rfind('/');
  const std::string name = NewName(slash == std::string::npos ? "ref" : ref.substr(slash + 1));
  ref_names_[ref] = name;
  auto expr = Visit(**target, ref.substr(1), ref.substr(slash == std::string::npos ? 0 : slash + 1), depth + 1);
  if (!expr.ok()) return expr.status();
  rules_.emplace_back(name, *expr);
  return name;
}

Result<std::string> Converter::Visit(const Json& s, const std::string& pointer, const std::string& hint, int depth) {
  if (depth > kMaxDepth) return InvalidArgument("JSON Schema nested too deeply at " + PathString(pointer));
  if (s.is_boolean()) {
    if (s.get<bool>()) return Primitive("value");
    return InvalidArgument("schema false at " + PathString(pointer) + " admits no value");
  }
  if (!s.is_object()) return Invalid(pointer, "a schema must be an object or a boolean");
  PAGODA_RETURN_IF_ERROR(CheckKeywords(s, pointer));
  if (s.contains("allOf") || (s.contains("$ref") && HasAssertionsBesides(s, {"$ref"}))) {
    auto flat = Flatten(s, pointer, 0);
    if (!flat.ok()) return flat.status();
    if (flat->is_boolean() && !flat->get<bool>()) {
      return InvalidArgument("allOf / $ref at " + PathString(pointer) + " admits no value (its parts contradict)");
    }
    return Visit(*flat, pointer, hint, depth + 1);
  }
  if (s.contains("$ref")) {
    if (!s["$ref"].is_string()) return Invalid(pointer, "'$ref' must be a string");
    return RefRule(s["$ref"].get<std::string>(), pointer, depth);
  }
  if (s.contains("anyOf") || s.contains("oneOf")) return VisitAnyOf(s, pointer, hint, depth);
  if (s.contains("enum") || s.contains("const")) return VisitEnum(s, pointer, hint);
  return VisitTypes(s, pointer, hint, depth);
}

// oneOf is treated as anyOf: exactly-one cannot be enforced in general, so
// its branches should be mutually exclusive (docs/STRUCTURED_OUTPUTS.md).
Result<std::string> Converter::VisitAnyOf(const Json& s, const std::string& pointer, const std::string& hint, int depth) {
  if (s.contains("anyOf") && s.contains("oneOf")) {
    return InvalidArgument("'anyOf' together with 'oneOf' at " + PathString(pointer) + " is not supported");
  }
  const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
  const Json& branches = s[key];
  if (!branches.is_array() || branches.empty()) {
    return Invalid(pointer, std::string("'") + key + "' must be a non-empty array");
  }
  Json siblings = Json::object();
  for (const auto& [k, v] : s.items()) {
    if (k != key) siblings[k] = v;
  }
  const bool merge = HasAssertionsBesides(siblings, {});
  std::vector<std::string> alts;
  for (size_t i = 0; i < branches.size(); ++i) {
    const std::string p = PathJoin(PathJoin(pointer, key), std::to_string(i));
    std::optional<Json> branch;
    if (merge) {
      auto a = Flatten(siblings, pointer, 0);
      if (!a.ok()) return a.status();
      auto b = Flatten(branches[i], p, 0);
      if (!b.ok()) return b.status();
      auto m = MergeSchemas(*a, *b, p);
      if (!m.ok()) return m.status();
      branch = std::move(*m);
    } else {
      branch = branches[i];
    }
    if (branch->is_boolean() && !branch->get<bool>()) continue;  // this branch admits nothing
    auto expr = Visit(*branch, p, hint, depth + 1);
    if (!expr.ok()) return expr.status();
    alts.push_back(*expr);
  }
  if (alts.empty()) return InvalidArgument(std::string("no branch of '") + key + "' at " + PathString(pointer) + " admits a value");
  return AddRule(hint, Alternatives(alts));
}

bool Converter::HasType(const std::set<std::string>& types, const Json& v) {
  if (v.is_null()) return types.count("null");
  if (v.is_boolean()) return types.count("boolean");
  if (v.is_string()) return types.count("string");
  if (v.is_array()) return types.count("array");
  if (v.is_object()) return types.count("object");
  if (types.count("number")) return true;
  const double d = v.get<double>();
  return types.count("integer") && std::floor(d) == d;
}

Result<std::string> Converter::VisitEnum(const Json& s, const std::string& pointer, const std::string& hint) {
  if (HasAssertionsBesides(s, {"enum", "const", "type"})) {
    for (const auto& [k, v] : s.items()) {
      if (k != "enum" && k != "const" && k != "type" && !schema_internal::IsAnnotation(k)) {
        return InvalidArgument("'" + k + "' together with 'enum' / 'const' at " + PathString(pointer) +
                               " is not supported");
      }
    }
  }
  std::vector<Json> values;
  if (s.contains("enum")) {
    if (!s["enum"].is_array() || s["enum"].empty()) return Invalid(pointer, "'enum' must be a non-empty array");
    for (const auto& v : s["enum"]) values.push_back(v);
  }
  if (s.contains("const")) {
    const Json& c = s["const"];
    if (s.contains("enum") && std::find(values.begin(), values.end(), c) == values.end()) values.clear();
    else values = {c};
  }
  std::optional<std::set<std::string>> types;
  if (s.contains("type")) {
    auto t = Types(s, pointer);
    if (!t.ok()) return t.status();
    types = *t;
  }
  std::vector<std::string> alts;
  std::set<std::string> seen;
  for (const auto& v : values) {
    if (types && !HasType(*types, v)) continue;
    std::string lit = LayoutLiteral(v);
    if (seen.insert(lit).second) alts.push_back(std::move(lit));
  }
  if (alts.empty()) {
    return InvalidArgument("'enum' / 'const' at " + PathString(pointer) + " admits no value of the schema's type");
  }
  return AddRule(hint.empty() ? "enum" : hint, Alternatives(alts));
}

std::string Converter::LayoutLiteral(const Json& v) {
  if (!v.is_object() && !v.is_array()) return GbnfLiteral(v.dump());
  if (v.empty()) return GbnfLiteral(v.is_object() ? "{}" : "[]");
  const std::string sp = Primitive("sp");
  std::vector<std::string> parts = {GbnfLiteral(v.is_object() ? "{" : "[")};
  bool first = true;
  for (const auto& [k, x] : v.items()) {
    if (!first) parts.insert(parts.end(), {GbnfLiteral(","), sp});
    first = false;
    if (v.is_object()) parts.insert(parts.end(), {GbnfLiteral(Json(k).dump() + ":"), sp});
    parts.push_back(LayoutLiteral(x));
  }
  parts.push_back(GbnfLiteral(v.is_object() ? "}" : "]"));
  return Seq(parts);
}

Result<std::set<std::string>> Converter::Types(const Json& s, const std::string& pointer) {
  std::set<std::string> out;
  const Json& t = s["type"];
  std::vector<Json> list = t.is_array() ? std::vector<Json>(t.begin(), t.end()) : std::vector<Json>{t};
  for (const auto& e : list) {
    if (!e.is_string() ||
        std::find(std::begin(kTypes), std::end(kTypes), e.get<std::string>()) == std::end(kTypes)) {
      return Invalid(pointer, "'type' must be one of null, boolean, object, array, number, integer, string (or an array of them)");
    }
    out.insert(e.get<std::string>());
  }
  if (out.empty()) return Invalid(pointer, "'type' is an empty array");
  return out;
}

Result<std::string> Converter::VisitTypes(const Json& s, const std::string& pointer, const std::string& hint, int depth) {
  std::set<std::string> types;
  if (s.contains("type")) {
    auto t = Types(s, pointer);
    if (!t.ok()) return t.status();
    types = *t;
  } else {
    // No type: the schema admits every type, with the keywords of each type
    // applying to it. Where type-specific keywords are present, only their
    // types are produced (a subset of what the schema admits).
    auto has = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys) {
        if (s.contains(k)) return true;
      }
      return false;
    };
    if (has({"properties", "required", "additionalProperties"})) types.insert("object");
    if (has({"items", "prefixItems", "additionalItems", "minItems", "maxItems"})) types.insert("array");
    if (has({"minLength", "maxLength", "pattern", "format"})) types.insert("string");
    if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) types.insert("number");
    if (types.empty()) return Primitive("value");
  }
  if (s.contains("format")) {
    if (!s["format"].is_string()) return Invalid(pointer, "'format' must be a string");
    const std::string f = s["format"].get<std::string>();
    if (f == "int32" || f == "int64") {
      // ajv-formats' integer formats also make a "number" an integer.
      if (types.erase("number")) types.insert("integer");
    } else if (!FormatRules(f, "x")) {
      return InvalidArgument("unsupported format '" + f + "' at " + PathString(pointer) + " (supported: " +
                             SupportedFormats() + ", and int32, int64 on integers)");
    }
  }
  if (types.count("number")) types.erase("integer");
  std::vector<std::string> alts;
  for (const auto& t : types) {
    Result<std::string> e = std::string();
    if (t == "null") e = Primitive("null");
    else if (t == "boolean") e = Primitive("boolean");
    else if (t == "integer" || t == "number") e = VisitNumber(s, pointer, t == "integer");
    else if (t == "string") e = VisitString(s, pointer, hint);
    else if (t == "array") e = VisitArray(s, pointer, hint, depth);
    else if (t == "object") e = VisitObject(s, pointer, hint, depth);
    if (!e.ok()) return e.status();
    alts.push_back(*e);
  }
  if (alts.size() == 1) return alts[0];
  return AddRule(hint, Alternatives(alts));
}
}  // namespace schema_internal

Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& opts) {
  schema_internal::Converter converter(schema, opts);
  return converter.Run();
}

Result<std::string> JsonSchemaToGbnf(const nlohmann::json& schema, const JsonSchemaOptions& opts) {
  return JsonSchemaToGbnf(nlohmann::ordered_json::parse(schema.dump()), opts);
}

}  // namespace pagoda::grammar
