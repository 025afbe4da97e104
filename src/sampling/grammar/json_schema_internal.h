// Internals of the JSON Schema converter shared by its source files: keyword
// tables, JSON pointer paths and allOf merging. Not a public interface.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace pagoda::grammar::schema_internal {

// Key order matters (properties are emitted in schema order).
using Json = nlohmann::ordered_json;

// "#/properties/a~1b" for display.
std::string PathString(const std::string& pointer);
// Appends one JSON pointer segment (escaping '~' and '/').
std::string PathJoin(const std::string& pointer, const std::string& segment);

bool IsAnnotation(const std::string& key);
// OK when every keyword of the schema object is supported (or an annotation,
// or a no-op such as "uniqueItems": false); otherwise InvalidArgument naming
// the first offending keyword and the path.
Status CheckKeywords(const Json& schema, const std::string& pointer);
// The schema has keywords other than annotations and those in `except`.
bool HasAssertionsBesides(const Json& schema, std::initializer_list<const char*> except);

// Merges two schema objects into one that admits exactly the instances both
// admit, for allOf and for siblings of $ref / anyOf. Neither may contain
// allOf or $ref (the caller resolves and flattens first); subschemas that
// meet under the same property / items are combined lazily as {"allOf":
// [a, b]}. Returns the boolean schema false when the two cannot both hold
// (disjoint types, different consts), InvalidArgument for combinations the
// converter cannot merge.
Result<Json> MergeSchemas(const Json& a, const Json& b, const std::string& pointer);

}  // namespace pagoda::grammar::schema_internal
