// The JSON Schema converter's state and its pieces, split over
// json_schema.cc (rules, $ref, composition, enums, type dispatch),
// json_schema_scalars.cc (numbers, strings) and json_schema_containers.cc
// (arrays, objects). Internal to sampling/grammar; one Converter per
// JsonSchemaToGbnf call, so no sharing between threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sampling/grammar/json_schema.h"
#include "sampling/grammar/json_schema_internal.h"
#include "sampling/grammar/regex_charset.h"

namespace pagoda::grammar::schema_internal {

inline constexpr int kMaxDepth = 64;         // inline nesting of subschemas
inline constexpr int kMaxMergeDepth = 32;    // $ref / allOf resolved while merging
inline constexpr int64_t kMaxCount = 10000;  // minLength, maxItems, ... (the GBNF repetition limit)

// "invalid JSON Schema at #/...: what".
Status Invalid(const std::string& pointer, const std::string& what);
// GBNF text helpers: "a | b"; "(x)"; "x?" "x*" "x{2,5}" ("" when max is 0,
// `x` must be atomic); parts joined by spaces, empty parts skipped.
std::string Alternatives(const std::vector<std::string>& alts);
std::string Paren(const std::string& expr);
std::string Repeat(const std::string& x, int64_t min, std::optional<int64_t> max);
std::string Seq(const std::vector<std::string>& parts);
// A non-negative integer keyword (minLength, ...), nullopt when absent; a
// max* above kMaxCount is lowered to it, a min* above it is an error.
Result<std::optional<int64_t>> Count(const Json& s, const char* key, const std::string& pointer);

class Converter {
 public:
  Converter(const Json& root, const JsonSchemaOptions& opts);
  Result<std::string> Run();

 private:
  std::string Prefixed(const std::string& s) const { return opts_.root_name + "-" + s; }
  std::string NewName(const std::string& hint);
  // Defines a rule for `body` (or reuses one with the same body); its name.
  std::string AddRule(const std::string& hint, const std::string& body);
  // A primitive rule (sp, char, string, integer, number, boolean, null,
  // value, object, array, key-char), defined on first use.
  std::string Primitive(const std::string& which);
  // Characters of extra-property keys: no escapes, so a key can never spell
  // a declared property's name in another way.
  static CodePointSet KeyChars();

  Result<const Json*> Resolve(const std::string& ref, const std::string& pointer);
  // allOf and $ref-with-siblings folded into one schema without either.
  Result<Json> Flatten(const Json& s, const std::string& pointer, int depth);
  Result<std::string> RefRule(const std::string& ref, const std::string& pointer, int depth);

  // Each returns a GBNF expression (often a rule name) for the schema.
  Result<std::string> Visit(const Json& s, const std::string& pointer, const std::string& hint, int depth);
  Result<std::string> VisitAnyOf(const Json& s, const std::string& pointer, const std::string& hint, int depth);
  Result<std::string> VisitEnum(const Json& s, const std::string& pointer, const std::string& hint);
  Result<std::string> VisitTypes(const Json& s, const std::string& pointer, const std::string& hint, int depth);
  Result<std::string> VisitNumber(const Json& s, const std::string& pointer, bool integer);
  Result<std::string> VisitString(const Json& s, const std::string& pointer, const std::string& hint);
  Result<std::string> VisitArray(const Json& s, const std::string& pointer, const std::string& hint, int depth);
  Result<std::string> VisitObject(const Json& s, const std::string& pointer, const std::string& hint, int depth);

  static bool HasType(const std::set<std::string>& types, const Json& v);
  Result<std::set<std::string>> Types(const Json& s, const std::string& pointer);
  // A constant JSON value in the output layout (its optional spaces too).
  std::string LayoutLiteral(const Json& v);
  // One bound keyword as a double; nullopt when absent.
  Result<std::optional<double>> BoundValue(const Json& s, const char* key, const std::string& pointer);
  struct ArrayShape {
    std::vector<std::pair<const Json*, std::string>> prefix;  // tuple positions: schema, pointer
    const Json* rest = nullptr;  // the items after them; nullptr: any value
    std::string rest_pointer;
    bool rest_allowed = true;   // false: no items after the tuple
  };
  // prefixItems / items / additionalItems (draft 7 tuples too).
  Result<ArrayShape> ArrayItems(const Json& s, const std::string& pointer);
  struct Member {  // one `"key": value` of an object
    std::string kv;
    bool required;
  };
  // "{" the members in order (optional ones may be left out), then any
  // number of `extra_kv` (none when empty), "}".
  std::string ObjectBody(const std::vector<Member>& members, const std::string& extra_kv, const std::string& hint);
  // A JSON key, none of `names`.
  std::string KeyExcluding(const std::vector<std::string>& names, const std::string& hint);

  const Json& root_;
  const JsonSchemaOptions& opts_;
  std::vector<std::pair<std::string, std::string>> rules_;  // in definition order
  std::map<std::string, std::string> body_names_;
  std::set<std::string> names_;
  std::set<std::string> defined_primitives_;
  std::set<std::string> defined_formats_;  // format rules written so far
  std::map<std::string, std::string> ref_names_;
};

}  // namespace pagoda::grammar::schema_internal
