// Keyword tables and allOf merging for the JSON Schema converter.
#include <algorithm>
#include <set>
#include <string_view>

#include "sampling/grammar/json_schema_internal.h"

namespace pagoda::grammar::schema_internal {

namespace {

constexpr std::string_view kAnnotations[] = {
    "title",    "description", "default",         "examples",         "$schema", "$id",
    "$comment", "deprecated",  "readOnly",        "writeOnly",        "$anchor",
    "contentEncoding",         "contentMediaType", "$defs",           "definitions"};

constexpr std::string_view kSupported[] = {
    "type",     "properties", "required",  "additionalProperties", "enum",      "const",
    "items",    "prefixItems", "additionalItems", "minItems",      "maxItems",  "minLength",
    "maxLength", "pattern",   "format",    "minimum",              "maximum",   "exclusiveMinimum",
    "exclusiveMaximum", "anyOf", "oneOf",  "allOf",                "$ref"};

constexpr std::string_view kUnsupported[] = {
    "multipleOf",        "uniqueItems",      "patternProperties", "not",           "if",
    "then",              "else",             "dependentRequired", "dependentSchemas",
    "dependencies",      "minProperties",    "maxProperties",     "propertyNames", "contains",
    "minContains",       "maxContains",      "unevaluatedProperties", "unevaluatedItems",
    "$dynamicRef",       "$dynamicAnchor",   "$recursiveRef",     "$recursiveAnchor",
    "contentSchema"};

template <size_t N>
bool In(const std::string_view (&table)[N], const std::string& key) {
  return std::find(std::begin(table), std::end(table), key) != std::end(table);
}

// Keywords whose value is a no-op, so accepting them ignores nothing.
bool IsNoOp(const std::string& key, const Json& value) {
  if (key == "uniqueItems") return value.is_boolean() && !value.get<bool>();
  if (key == "minProperties") return value.is_number() && value.get<double>() == 0;
  return false;
}

Status MergeError(const std::string& key, const std::string& pointer, const std::string& why) {
  return InvalidArgument("cannot combine '" + key + "' of allOf / $ref / anyOf branches at " +
                         PathString(pointer) + ": " + why);
}

std::set<std::string> TypeSet(const Json& t) {
  std::set<std::string> out;
  if (t.is_string()) out.insert(t.get<std::string>());
  if (t.is_array()) {
    for (const auto& e : t) {
      if (e.is_string()) out.insert(e.get<std::string>());
    }
  }
  return out;
}

Json AllOf(const Json& a, const Json& b) {
  if (a == b) return a;
  return Json{{"allOf", Json::array({a, b})}};
}

// Whether `side` declares every property that `other` declares.
bool DeclaresAll(const Json& side, const Json& other) {
  if (!other.contains("properties") || !other["properties"].is_object()) return true;
  for (const auto& [k, v] : other["properties"].items()) {
    if (!side.contains("properties") || !side["properties"].contains(k)) return false;
  }
  return true;
}

}  // namespace

std::string PathString(const std::string& pointer) { return "#" + pointer; }

std::string PathJoin(const std::string& pointer, const std::string& segment) {
  std::string out = pointer + "/";
  for (char c : segment) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

bool IsAnnotation(const std::string& key) { return In(kAnnotations, key) || key.rfind("x-", 0) == 0; }

Status CheckKeywords(const Json& schema, const std::string& pointer) {
  for (const auto& [key, value] : schema.items()) {
    if (IsAnnotation(key) || In(kSupported, key) || IsNoOp(key, value)) continue;
    if (In(kUnsupported, key)) {
      return InvalidArgument("unsupported JSON Schema keyword '" + key + "' at " + PathString(pointer) +
                             ": it cannot be enforced during decoding");
    }
    return InvalidArgument("unknown JSON Schema keyword '" + key + "' at " + PathString(pointer));
  }
  return Status::Ok();
}

bool HasAssertionsBesides(const Json& schema, std::initializer_list<const char*> except) {
  for (const auto& [key, value] : schema.items()) {
    if (IsAnnotation(key) || IsNoOp(key, value)) continue;
    if (std::find_if(except.begin(), except.end(), [&](const char* e) { return key == e; }) != except.end()) {
      continue;
    }
    return true;
  }
  return false;
}

Result<Json> MergeSchemas(const Json& a, const Json& b, const std::string& pointer) {
  if (a.is_boolean() && !a.get<bool>()) return a;
  if (b.is_boolean() && !b.get<bool>()) return b;
  if (a.is_boolean()) return b;
  if (b.is_boolean()) return a;
  Json out = Json::object();
  for (const auto& [k, v] : a.items()) {
    if (!IsAnnotation(k)) out[k] = v;
  }
  for (const auto& [key, v] : b.items()) {
    if (IsAnnotation(key)) continue;
    if (!out.contains(key)) {
      out[key] = v;
      continue;
    }
    Json& cur = out[key];
    if (cur == v) continue;
    if (key == "type") {
      std::set<std::string> x = TypeSet(cur), y = TypeSet(v), both;
      for (const auto& t : x) {
        if (y.count(t)) both.insert(t);
        else if (t == "number" && y.count("integer")) both.insert("integer");
      }
      for (const auto& t : y) {
        if (t == "number" && x.count("integer")) both.insert("integer");
      }
      if (both.empty()) return Json(false);
      cur = Json(std::vector<std::string>(both.begin(), both.end()));
    } else if (key == "properties") {
      if (!cur.is_object() || !v.is_object()) return MergeError(key, pointer, "not an object");
      for (const auto& [name, sub] : v.items()) {
        cur[name] = cur.contains(name) ? AllOf(cur[name], sub) : sub;
      }
    } else if (key == "required") {
      if (!cur.is_array() || !v.is_array()) return MergeError(key, pointer, "not an array");
      for (const auto& name : v) {
        if (std::find(cur.begin(), cur.end(), name) == cur.end()) cur.push_back(name);
      }
    } else if (key == "items" || key == "additionalProperties") {
      if (cur.is_array() || v.is_array()) return MergeError(key, pointer, "array-form items");
      cur = AllOf(cur, v);
    } else if (key == "enum") {
      if (!cur.is_array() || !v.is_array()) return MergeError(key, pointer, "not an array");
      Json both = Json::array();
      for (const auto& e : cur) {
        if (std::find(v.begin(), v.end(), e) != v.end()) both.push_back(e);
      }
      if (both.empty()) return Json(false);
      cur = both;
    } else if (key == "const") {
      return Json(false);  // two different constants
    } else if (key == "minLength" || key == "minItems" || key == "minimum" || key == "exclusiveMinimum") {
      if (!cur.is_number() || !v.is_number()) return MergeError(key, pointer, "not a number");
      if (v.get<double>() > cur.get<double>()) cur = v;
    } else if (key == "maxLength" || key == "maxItems" || key == "maximum" || key == "exclusiveMaximum") {
      if (!cur.is_number() || !v.is_number()) return MergeError(key, pointer, "not a number");
      if (v.get<double>() < cur.get<double>()) cur = v;
    } else {
      // pattern, format, prefixItems, anyOf / oneOf twice, ...
      return MergeError(key, pointer, "two different values");
    }
  }
  // Extra keys: a branch's additionalProperties (other than true) governs
  // every key it does not declare, including the other branch's properties,
  // which a merged "properties" would silently exempt.
  for (const auto* side : {&a, &b}) {
    const Json& other = side == &a ? b : a;
    if (side->contains("additionalProperties") && (*side)["additionalProperties"] != Json(true) &&
        !DeclaresAll(*side, other)) {
      return MergeError("additionalProperties", pointer,
                        "a branch's additionalProperties would apply to another branch's properties");
    }
  }
  return out;
}

}  // namespace pagoda::grammar::schema_internal
