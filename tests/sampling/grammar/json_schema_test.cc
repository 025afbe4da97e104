// JsonSchemaToGbnf: each grammar compiles (CompileGbnf), accepts hand-written
// valid documents in the documented layout and rejects invalid ones; numeric
// bounds are checked exhaustively against plain arithmetic; every keyword that
// cannot be enforced, and every invalid schema, is an error naming it. The
// corpus test (json_schema_corpus.cc) checks random outputs with ajv.
#include "sampling/grammar/json_schema.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "sampling/grammar/grammar.h"
#include "sampling/grammar/matcher.h"

namespace pagoda::grammar {
namespace {

using OJson = nlohmann::ordered_json;

std::shared_ptr<const Grammar> Compile(const std::string& schema, const JsonSchemaOptions& opts = {}) {
  auto gbnf = JsonSchemaToGbnf(OJson::parse(schema), opts);
  EXPECT_TRUE(gbnf.ok()) << schema << ": " << gbnf.status().ToString();
  if (!gbnf.ok()) return nullptr;
  auto g = CompileGbnf(*gbnf, opts.root_name);
  EXPECT_TRUE(g.ok()) << schema << "\n" << *gbnf << "\n" << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

struct Case {
  std::string schema;
  std::vector<std::string> accept;
  std::vector<std::string> reject;
};

void RunCases(const std::vector<Case>& cases, const JsonSchemaOptions& opts = {}) {
  for (const auto& c : cases) {
    auto g = Compile(c.schema, opts);
    ASSERT_NE(g, nullptr) << c.schema;
    for (const auto& doc : c.accept) EXPECT_TRUE(Accepts(*g, doc)) << c.schema << " should accept " << doc;
    for (const auto& doc : c.reject) EXPECT_FALSE(Accepts(*g, doc)) << c.schema << " should reject " << doc;
  }
}

std::string Error(const std::string& schema, const JsonSchemaOptions& opts = {}) {
  auto r = JsonSchemaToGbnf(OJson::parse(schema), opts);
  if (r.ok()) return "(accepted)";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << schema;
  return r.status().message();
}

TEST(JsonSchemaToGbnfTest, Scalars) {
  RunCases({
      {R"({"type": "string"})",
       {R"("")", R"("abc")", R"("a\"b")", R"("\\")", R"("\u00e9")", "\"\xC3\xA9\"", R"("\n\t")", R"("\/")"},
       {R"(abc)", R"("a)", R"("\x")", R"("\ud800")", "\"a\nb\"", R"("a" )", R"( "a")"}},
      {R"({"type": "integer"})",
       {"0", "-5", "42", "1234567890123456"},
       {"01", "1.0", "1e3", "12345678901234567", "+1", "", "--1"}},
      {R"({"type": "number"})",
       {"0", "-1.5", "3.25", "1e10", "2.5E-3", "-0.0", "1e+99"},
       {"1.", ".5", "01", "1e", "1e999", "NaN", "Infinity"}},
      {R"({"type": "boolean"})", {"true", "false"}, {"True", "1", "null"}},
      {R"({"type": "null"})", {"null"}, {"nul", "\"null\""}},
      {R"({"type": ["string", "null"]})", {"null", R"("x")"}, {"1", "true"}},
      {R"({"type": ["integer", "number"]})", {"1", "1.5"}, {"\"1\""}},
  });
}

TEST(JsonSchemaToGbnfTest, AnyValueForEmptyAndTrueSchemas) {
  const std::vector<std::string> docs = {
      "null", "1", "-2.5e3", R"("s")", "[]", "{}", R"([1, "a", [true], {"k": null}])",
      R"({"a":{"b":[1,2,{"c":"d"}]}, "e": false})"};
  for (const char* schema : {"{}", "true", R"({"description": "anything", "$comment": "x"})"}) {
    RunCases({{schema, docs, {"", "nul", "[1,]", "{\"a\"}", "{'a': 1}", "[1 ,2]"}}});
  }
}

TEST(JsonSchemaToGbnfTest, LayoutAllowsOneSpaceAfterColonAndComma) {
  RunCases({{R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "integer"}}}, "required": ["a", "b"]})",
             {R"({"a":1,"b":[1,2]})", R"({"a": 1, "b": [1, 2]})", R"({"a": 1,"b":[1, 2]})"},
             {R"({ "a":1,"b":[]})", R"({"a":1 ,"b":[]})", R"({"a":  1,"b":[]})", R"({"a":1,"b":[] })",
              "{\"a\":\n1,\"b\":[]}", R"({"a":1, "b":[1,  2]})"}}});
}

TEST(JsonSchemaToGbnfTest, ObjectsFollowPropertyOrderWithOptionalKeys) {
  RunCases({{R"({"type": "object", "properties": {"z": {"type": "integer"}, "a": {"type": "string"}, "m": {"type": "boolean"}},
                 "required": ["a"], "additionalProperties": false})",
             {R"({"a":"x"})", R"({"z":1,"a":"x"})", R"({"a":"x","m":true})", R"({"z":1,"a":"x","m":false})"},
             {R"({})", R"({"a":"x","z":1})", R"({"m":true,"a":"x"})", R"({"z":1})", R"({"a":"x","q":1})",
              R"({"a":"x","a":"y"})", R"({"a":1})"}},
            {R"({"type": "object", "properties": {"p": {"type": "integer"}, "q": {"type": "integer"}}, "additionalProperties": false})",
             {"{}", R"({"p":1})", R"({"q":2})", R"({"p":1,"q":2})"},
             {R"({"q":2,"p":1})", R"({,})", R"({"p":1,})"}},
            {R"({"type": "object", "properties": {}, "additionalProperties": false})", {"{}"}, {R"({"a":1})"}}});
}

TEST(JsonSchemaToGbnfTest, AdditionalPropertiesVariants) {
  // Default (JSON Schema): extra keys of any value after the declared ones,
  // never a declared name again, never an escape in an extra key.
  RunCases({{R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]})",
             {R"({"id":1})", R"({"id":1,"x":[1,{"y":null}]})", R"({"id":1,"i":2,"idx":3,"Id":"s"})"},
             {R"({"id":1,"id":2})", R"({"x":1,"id":1})", R"({"id":1,"\u0069d":2})"}},
            {R"({"type": "object", "additionalProperties": {"type": "string"}})",
             {"{}", R"({"a":"x","b":"y"})", "{\"\xC3\xA9\":\"z\"}"},
             {R"({"a":1})", R"({"a":"x",})"}},
            {R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}})",
             {R"({"a":1})", R"({"a":1,"b":true})", R"({"b":false})", "{}"},
             {R"({"a":true})", R"({"a":1,"b":1})", R"({"a":1,"a":true})"}},
            {R"({"type": "object", "required": ["x", "y"]})",
             {R"({"x":1,"y":[]})", R"({"x":1,"y":2,"z":3})"},
             {R"({"x":1})", R"({"y":1,"x":2})"}},
            {R"({"type": "object", "properties": {"gone": false, "k": {"type": "null"}}})",
             {"{}", R"({"k":null})", R"({"k":null,"other":1})"},
             {R"({"gone":1})", R"({"k":null,"gone":1})"}}});
}

TEST(JsonSchemaToGbnfTest, StrictOptionClosesObjects) {
  JsonSchemaOptions strict;
  strict.strict = true;
  RunCases({{R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})",
             {R"({"a":1})"},
             {R"({"a":1,"b":2})"}},
            {R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": true})",
             {R"({"a":1,"b":2})"},
             {}}},
           strict);
  EXPECT_NE(Error(R"({"type": "object", "required": ["x"]})", strict).find("'x'"), std::string::npos);
}

TEST(JsonSchemaToGbnfTest, Arrays) {
  RunCases({
      {R"({"type": "array", "items": {"type": "integer"}})",
       {"[]", "[1]", "[1,2,3]", "[1, 2]"},
       {"[", "[1,]", "[,1]", "[\"a\"]", "[1 ]"}},
      {R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3})",
       {"[true,false]", "[true,true,true]"},
       {"[]", "[true]", "[true,true,true,true]"}},
      {R"({"type": "array", "maxItems": 0})", {"[]"}, {"[1]"}},
      {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
       {"[]", R"(["a"])", R"(["a",1])"},
       {R"([1])", R"(["a",1,2])", R"(["a","b"])"}},
      {R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "minItems": 2})",
       {R"(["a",1])", R"(["a",1,2,3])"},
       {R"(["a"])", R"(["a","b"])", "[]"}},
      {R"({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
           "items": [{"type": "null"}, {"type": "boolean"}], "additionalItems": {"type": "string"}})",
       {"[]", "[null]", "[null,true]", R"([null,true,"x","y"])"},
       {R"([true])", R"([null,true,1])"}},
      {R"({"type": "array", "prefixItems": [{"type": "integer"}, false]})", {"[]", "[1]"}, {"[1,2]"}},
      {R"({"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1}})",
       {"[]", "[[1],[2,3]]"},
       {"[[]]", "[[1],[]]"}},
  });
}

TEST(JsonSchemaToGbnfTest, StringLengthsCountCodePoints) {
  RunCases({{R"({"type": "string", "minLength": 2, "maxLength": 3})",
             {R"("ab")", R"("abc")", "\"\xC3\xA9\xC3\xA9\"", "\"\xF0\x9F\x98\x80x\"", R"("\n\u0041")"},
             {R"("a")", R"("abcd")", "\"\xC3\xA9\"", R"("\ud83d\ude00")"}},
            {R"({"type": "string", "maxLength": 0})", {R"("")"}, {R"("a")"}},
            // Above the repetition limit a maximum is lowered to it.
            {R"({"type": "string", "maxLength": 1000000})", {R"("abc")", "\"" + std::string(10000, 'x') + "\""},
             {"\"" + std::string(10001, 'x') + "\""}}});
  EXPECT_NE(Error(R"({"type": "array", "minItems": 10001})").find("'minItems' above 10000"), std::string::npos);
}

TEST(JsonSchemaToGbnfTest, Formats) {
  RunCases({
      {R"({"type": "string", "format": "date"})",
       {R"("2024-02-29")", R"("2000-02-29")", R"("1999-12-31")", R"("2023-04-30")", R"("0000-01-01")"},
       {R"("2023-02-29")", R"("1900-02-29")", R"("2023-04-31")", R"("2023-13-01")", R"("2023-00-10")",
        R"("2023-1-01")", R"("2023-01-32")"}},
      {R"({"type": "string", "format": "time"})",
       {R"("23:59:59Z")", R"("00:00:00.123+05:30")", R"("12:30:00-08:00")"},
       {R"("24:00:00Z")", R"("12:60:00Z")", R"("12:00:00")", R"("12:00Z")"}},
      {R"({"type": "string", "format": "date-time"})",
       {R"("2024-06-01T12:00:00Z")", R"("2024-06-01T12:00:00.5+01:00")"},
       {R"("2024-06-01 12:00:00Z")", R"("2024-06-01T12:00:00")"}},
      {R"({"type": "string", "format": "uuid"})",
       {R"("123e4567-e89b-12d3-a456-426614174000")", R"("ABCDEF01-2345-6789-ABCD-EF0123456789")"},
       {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"}},
      {R"({"type": "string", "format": "email"})",
       {R"("a@b.co")", R"("first.last+tag@mail.example.org")", R"("x_y@a-b.c")"},
       {R"("a@b")", R"("@b.co")", R"("a@-b.co")", R"("a..b@c.de")", R"("a@b.co-")", R"("a b@c.de")"}},
  });
}

// Rule names come from property names; they never capture a format's rules.
TEST(JsonSchemaToGbnfTest, PropertyNamesDoNotCollideWithRuleNames) {
  RunCases({{R"({"type": "object", "properties": {"email": {"type": "string", "maxLength": 2}, "date": {"type": "integer"},
                 "char": {"type": "boolean"}, "to": {"type": "string", "format": "email"}, "when": {"type": "string", "format": "date"}},
                 "required": ["email", "date", "char", "to", "when"], "additionalProperties": false})",
             {R"({"email":"ab","date":1,"char":true,"to":"a@b.co","when":"2024-01-01"})"},
             {R"({"email":"abc","date":1,"char":true,"to":"a@b.co","when":"2024-01-01"})",
              R"({"email":"ab","date":1,"char":true,"to":"ab","when":"2024-01-01"})",
              R"({"email":"ab","date":1,"char":true,"to":"a@b.co","when":"1"})"}}});
}

TEST(JsonSchemaToGbnfTest, PatternsAreUnanchoredSearchesOverTheDecodedString) {
  RunCases({
      {R"({"type": "string", "pattern": "^[a-z]+$"})", {R"("abc")"}, {R"("")", R"("ab1")", R"("Abc")"}},
      {R"({"type": "string", "pattern": "[0-9]{3}"})", {R"("123")", R"("ab123cd")", R"("x\"1234")"}, {R"("12a3")", R"("")"}},
      {R"({"type": "string", "pattern": "^a\"b$"})", {R"("a\"b")"}, {R"("ab")", R"("a"b")"}},
      {R"({"type": "string", "pattern": "^\\d{3}-\\d{4}$"})", {R"("555-1234")"}, {R"("5555-1234")", R"("555-12345")"}},
      {R"({"type": "string", "pattern": "^(red|green)$"})", {R"("red")", R"("green")"}, {R"("blue")", R"("redgreen")"}},
  });
}

TEST(JsonSchemaToGbnfTest, EnumsAndConsts) {
  RunCases({
      {R"({"enum": ["red", "green", 3, null, true, {"k": [1]}, [1, "a"]]})",
       {R"("red")", R"("green")", "3", "null", "true", R"({"k":[1]})", R"([1,"a"])", R"({"k": [1]})", R"([1, "a"])"},
       {R"("blue")", "4", "false", R"({"k":[2]})", R"("RED")"}},
      {R"({"type": "string", "enum": ["a", 1, "b"]})", {R"("a")", R"("b")"}, {"1"}},
      {R"({"const": "fixed"})", {R"("fixed")"}, {R"("other")"}},
      {R"({"const": 2, "enum": [1, 2]})", {"2"}, {"1"}},
      {R"({"type": "string", "enum": ["a\"q", "\u00e9", "line\nbreak"]})",
       {R"("a\"q")", "\"\xC3\xA9\"", R"("line\nbreak")"},
       {R"("aq")"}},
  });
}

TEST(JsonSchemaToGbnfTest, CompositionKeywords) {
  RunCases({
      {R"({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string", "maxLength": 1}]})",
       {"10", "999", R"("x")", R"("")"},
       {"9", R"("xy")"}},
      {R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}}, "required": ["kind", "n"], "additionalProperties": false},
                      {"type": "object", "properties": {"kind": {"const": "b"}, "s": {"type": "string"}}, "required": ["kind", "s"], "additionalProperties": false}]})",
       {R"({"kind":"a","n":1})", R"({"kind":"b","s":"x"})"},
       {R"({"kind":"a","s":"x"})", R"({"kind":"c","n":1})"}},
      {R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                      {"properties": {"a": {}, "b": {"type": "string"}}, "required": ["b"], "additionalProperties": false}]})",
       {R"({"a":1,"b":"x"})"},
       {R"({"a":1})", R"({"b":"x","a":1})", R"({"a":1,"b":"x","c":2})"}},
      {R"({"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 5}, {"exclusiveMaximum": 4}]})",
       {"0", "3"},
       {"4", "5", "-1"}},
      {R"({"type": "object", "properties": {"t": {"type": "string"}}, "required": ["t"], "additionalProperties": false,
           "anyOf": [{"properties": {"t": {"const": "x"}}}, {"properties": {"t": {"const": "y"}}}]})",
       {R"({"t":"x"})", R"({"t":"y"})"},
       {R"({"t":"z"})"}},
      {R"({"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
           "$ref": "#/$defs/base", "properties": {"name": {"type": "string"}}, "required": ["name"]})",
       {R"({"id":1,"name":"n"})"},
       {R"({"id":1})", R"({"name":"n"})"}},
  });
}

TEST(JsonSchemaToGbnfTest, RefsAndRecursion) {
  RunCases({
      {R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
                              "required": ["value", "next"], "additionalProperties": false}},
           "$ref": "#/$defs/node"})",
       {R"({"value":1,"next":null})", R"({"value":1,"next":{"value":2,"next":{"value":3,"next":null}}})"},
       {R"({"value":1})", R"({"value":1,"next":{"value":2}})"}},
      {R"({"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}},
           "required": ["name"], "additionalProperties": false})",
       {R"({"name":"r"})", R"({"name":"r","children":[{"name":"a","children":[]},{"name":"b"}]})"},
       {R"({"name":"r","children":[{}]})"}},
      {R"({"definitions": {"pos": {"type": "integer", "minimum": 1}}, "type": "array", "items": {"$ref": "#/definitions/pos"}})",
       {"[1,2]"},
       {"[0]"}},
      {R"({"properties": {"a~b": {"type": "integer"}, "c/d": {"$ref": "#/properties/a~0b"}}, "required": ["a~b", "c/d"], "additionalProperties": false})",
       {R"({"a~b":1,"c/d":2})"},
       {R"({"a~b":1,"c/d":"x"})"}},
  });
}

// Integer bounds: exhaustive over a window against plain comparisons.
TEST(JsonSchemaToGbnfTest, IntegerBoundsAreExact) {
  struct Bounds {
    std::string keywords;
    long lo, hi;  // expected inclusive range (within the probe window)
  };
  const std::vector<Bounds> cases = {
      {R"("minimum": 0, "maximum": 9)", 0, 9},
      {R"("minimum": 7, "maximum": 1234)", 7, 1234},
      {R"("minimum": -1100, "maximum": -5)", -1100, -5},
      {R"("minimum": -37, "maximum": 408)", -37, 408},
      {R"("exclusiveMinimum": 99, "exclusiveMaximum": 1000)", 100, 999},
      {R"("minimum": 1.5, "maximum": 20.9)", 2, 20},
      {R"("minimum": 190)", 190, 1500},
      {R"("maximum": -3)", -1500, -3},
      {R"("minimum": 0)", 0, 1500},
      {R"("minimum": 5, "maximum": 5)", 5, 5},
      {R"("format": "int32", "minimum": -10, "maximum": 10)", -10, 10},
  };
  for (const auto& c : cases) {
    auto g = Compile(R"({"type": "integer", )" + c.keywords + "}");
    ASSERT_NE(g, nullptr) << c.keywords;
    for (long x = -1500; x <= 1500; ++x) {
      EXPECT_EQ(Accepts(*g, std::to_string(x)), x >= c.lo && x <= c.hi) << c.keywords << " x=" << x;
    }
    EXPECT_FALSE(Accepts(*g, "-0")) << c.keywords;
    EXPECT_FALSE(Accepts(*g, "007")) << c.keywords;
  }
  auto big = Compile(R"({"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991})");
  ASSERT_NE(big, nullptr);
  EXPECT_TRUE(Accepts(*big, "9007199254740991"));
  EXPECT_FALSE(Accepts(*big, "9007199254740992"));
  EXPECT_TRUE(Accepts(*big, "-9007199254740991"));
  EXPECT_FALSE(Accepts(*big, "-9007199254740992"));
}

// Number bounds (integer-valued): every decimal with up to two fraction
// digits in a window, against double comparisons.
TEST(JsonSchemaToGbnfTest, NumberBoundsAreExact) {
  struct Bounds {
    std::string keywords;
    double lo;
    bool lo_excl;
    double hi;
    bool hi_excl;
  };
  const double inf = 1e300;
  const std::vector<Bounds> cases = {
      {R"("minimum": 0, "maximum": 1)", 0, false, 1, false},
      {R"("exclusiveMinimum": 0, "exclusiveMaximum": 1)", 0, true, 1, true},
      {R"("minimum": -2, "exclusiveMaximum": 3)", -2, false, 3, true},
      {R"("exclusiveMinimum": -3, "maximum": -1)", -3, true, -1, false},
      {R"("minimum": 0)", 0, false, inf, false},
      {R"("exclusiveMinimum": 0)", 0, true, inf, false},
      {R"("maximum": 0)", -inf, false, 0, false},
      {R"("exclusiveMaximum": 0)", -inf, false, 0, true},
      {R"("minimum": 2, "exclusiveMinimum": 2, "maximum": 4, "exclusiveMaximum": 5)", 2, true, 4, false},
      {R"("minimum": 3, "maximum": 3)", 3, false, 3, false},
  };
  for (const auto& c : cases) {
    auto g = Compile(R"({"type": "number", )" + c.keywords + "}");
    ASSERT_NE(g, nullptr) << c.keywords;
    for (int hundredths = -600; hundredths <= 600; ++hundredths) {
      const double x = hundredths / 100.0;
      const bool in = (c.lo_excl ? x > c.lo : x >= c.lo) && (c.hi_excl ? x < c.hi : x <= c.hi);
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.2f", x);
      std::string text = buf;
      if (text == "-0.00") continue;  // printf's negative zero
      const bool accepted = Accepts(*g, text);
      // The grammar may write a number in fewer ways than JSON allows (it
      // never accepts what is out of range); in range, the canonical %.2f
      // and integer forms must be accepted.
      // In range, a form without trailing zeros must be accepted.
      if (!in) {
        EXPECT_FALSE(accepted) << c.keywords << " " << text;
      } else if (hundredths % 10 != 0) {
        EXPECT_TRUE(accepted) << c.keywords << " " << text;
      }
      if (hundredths % 100 == 0) {
        const std::string integer = std::to_string(hundredths / 100);
        EXPECT_EQ(Accepts(*g, integer), in) << c.keywords << " " << integer;
      }
    }
  }
}

TEST(JsonSchemaToGbnfTest, UnsupportedKeywordsAreNamedWithTheirPath) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "integer", "multipleOf": 3})", "'multipleOf' at #"},
      {R"({"type": "array", "uniqueItems": true})", "'uniqueItems' at #"},
      {R"({"type": "object", "patternProperties": {"^x": {}}})", "'patternProperties' at #"},
      {R"({"not": {"type": "string"}})", "'not' at #"},
      {R"({"if": {"type": "string"}, "then": {"minLength": 1}})", "'if' at #"},
      {R"({"type": "object", "dependentRequired": {"a": ["b"]}})", "'dependentRequired' at #"},
      {R"({"type": "object", "minProperties": 1})", "'minProperties' at #"},
      {R"({"type": "object", "maxProperties": 3})", "'maxProperties' at #"},
      {R"({"type": "object", "propertyNames": {"pattern": "^a"}})", "'propertyNames' at #"},
      {R"({"type": "array", "contains": {"type": "integer"}})", "'contains' at #"},
      {R"({"type": "object", "unevaluatedProperties": false})", "'unevaluatedProperties' at #"},
      {R"({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "number", "multipleOf": 0.5}}}}})",
       "'multipleOf' at #/properties/a/properties/b"},
      {R"({"type": "array", "items": {"nullable": true}})", "unknown JSON Schema keyword 'nullable' at #/items"},
      {R"({"type": "string", "format": "uri"})", "unsupported format 'uri' at #"},
      {R"({"type": "number", "minimum": 0.5})", "non-integer bound"},
      {R"({"$ref": "https://example.com/schema.json"})", "remote $ref"},
      {R"({"$defs": {"a": {"type": "string", "not": {}}}, "properties": {"x": {"$ref": "#/$defs/a"}}})", "'not' at #/$defs/a"},
      {R"({"anyOf": [{"type": "string"}, {"type": "integer", "multipleOf": 2}]})", "'multipleOf' at #/anyOf/1"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "'pattern' at #: regex: backreference"},
      {R"({"type": "string", "pattern": "^a", "minLength": 2})", "'pattern' together with"},
      {R"({"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "b"}]})", "'pattern'"},
      {R"({"type": "string", "enum": ["a"], "minLength": 1})", "'minLength' together with 'enum'"},
      // additionalProperties beside allOf governs the branches' keys too (the
      // classic JSON Schema trap): refused rather than merged wrongly.
      {R"({"allOf": [{"properties": {"a": {}}}], "additionalProperties": false})", "'additionalProperties'"},
  };
  for (const auto& [schema, needle] : cases) {
    const std::string msg = Error(schema);
    EXPECT_NE(msg.find(needle), std::string::npos) << schema << " -> " << msg;
  }
}

TEST(JsonSchemaToGbnfTest, InvalidSchemasAreClearErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "strin"})", "'type' must be one of"},
      {R"({"type": []})", "'type'"},
      {R"({"type": 5})", "'type' must be one of"},
      {R"({"$ref": "#/$defs/missing"})", "unresolvable $ref '#/$defs/missing'"},
      {R"({"$ref": "#anchor"})", "anchors are not supported"},
      {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})", "cycle"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "minItems > maxItems"},
      {R"({"type": "array", "minItems": -1})", "'minItems' must be a non-negative integer"},
      {R"({"type": "string", "minLength": 1.5})", "'minLength' must be a non-negative integer"},
      {R"({"type": "string", "minLength": 5, "maxLength": 2})", "minLength > maxLength"},
      {R"({"type": "integer", "minimum": 10, "maximum": 5})", "no integer satisfies"},
      {R"({"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2})", "no integer satisfies"},
      {R"({"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1})", "no number satisfies"},
      {R"({"type": "integer", "minimum": "0"})", "'minimum' must be a number"},
      {R"({"type": "object", "properties": []})", "'properties' must be an object"},
      {R"({"type": "object", "required": "a"})", "'required' must be an array"},
      {R"({"type": "object", "properties": {"a": false}, "required": ["a"]})", "has schema false"},
      {R"({"type": "object", "additionalProperties": false, "required": ["a"]})", "not in 'properties'"},
      {R"({"type": "object", "additionalProperties": 3})", "'additionalProperties' must be"},
      {R"({"enum": []})", "'enum' must be a non-empty array"},
      {R"({"type": "integer", "enum": ["a"]})", "admits no value"},
      {"false", "admits no value"},
      {R"({"anyOf": []})", "'anyOf' must be a non-empty array"},
      {R"({"allOf": [{"type": "string"}, {"type": "integer"}]})", "admits no value"},
      {R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})", "cannot be met"},
      {R"({"properties": {"a": 3}})", "a schema must be an object or a boolean"},
      {R"({"type": "integer", "minimum": 1e30})", "outside the supported range"},
      {R"({"type": "string", "format": 7})", "'format' must be a string"},
      {R"({"type": "string", "pattern": "[z-a]"})", "out of order"},
  };
  for (const auto& [schema, needle] : cases) {
    const std::string msg = Error(schema);
    EXPECT_NE(msg.find(needle), std::string::npos) << schema << " -> " << msg;
  }
  JsonSchemaOptions bad_root;
  bad_root.root_name = "bad name";
  EXPECT_NE(Error("{}", bad_root).find("root name"), std::string::npos);
}

TEST(JsonSchemaToGbnfTest, AnnotationsAreIgnored) {
  RunCases({{R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://x/y", "title": "T",
                 "description": "D", "$comment": "C", "examples": [1], "default": 2, "deprecated": false,
                 "readOnly": true, "x-vendor": {"any": 1}, "type": "integer", "uniqueItems": false})",
             {"1"},
             {"\"1\""}}});
}

// Every rule but the root is prefixed, so grammars for several schemas can
// be joined into one.
TEST(JsonSchemaToGbnfTest, RulesArePrefixedAndGrammarsCanBeJoined) {
  JsonSchemaOptions a, b;
  a.root_name = "tool-a";
  b.root_name = "tool-b";
  const auto sa = JsonSchemaToGbnf(OJson::parse(R"({"type": "object", "properties": {"x": {"type": "string", "format": "date"}}, "required": ["x"]})"), a);
  const auto sb = JsonSchemaToGbnf(OJson::parse(R"({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"})"), b);
  ASSERT_TRUE(sa.ok() && sb.ok());
  for (const auto* text : {&*sa, &*sb}) {
    const std::string prefix = text == &*sa ? "tool-a" : "tool-b";
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      const std::string name = line.substr(0, line.find(" ::= "));
      EXPECT_TRUE(name == prefix || name.rfind(prefix + "-", 0) == 0) << name;
    }
  }
  const std::string joined = "root ::= \"A\" tool-a | \"B\" tool-b\n" + *sa + *sb;
  auto g = CompileGbnf(joined);
  ASSERT_TRUE(g.ok()) << joined << g.status().ToString();
  EXPECT_TRUE(Accepts(**g, R"(A{"x":"2024-01-02"})"));
  EXPECT_TRUE(Accepts(**g, "B[[],[[]]]"));
  EXPECT_FALSE(Accepts(**g, "A[[]]"));
}

TEST(JsonSchemaToGbnfTest, PlainJsonKeepsItsSortedKeyOrder) {
  // nlohmann::json sorts keys; ordered_json keeps the document's order.
  const char* schema = R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": false})";
  auto sorted = JsonSchemaToGbnf(nlohmann::json::parse(schema));
  ASSERT_TRUE(sorted.ok());
  auto g = CompileGbnf(*sorted);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(Accepts(**g, R"({"a":1,"b":2})"));
  auto ordered = Compile(schema);
  ASSERT_NE(ordered, nullptr);
  EXPECT_TRUE(Accepts(*ordered, R"({"b":2,"a":1})"));
  EXPECT_FALSE(Accepts(*ordered, R"({"a":1,"b":2})"));
}

}  // namespace
}  // namespace pagoda::grammar

namespace pagoda::grammar {
namespace {

// Schemas that recurse without a way out, or through the left edge, convert
// but are refused by the grammar compiler (a 400, never a hang).
TEST(JsonSchemaToGbnfTest, RecursionWithoutBaseCaseIsACompileError) {
  for (const char* schema : {R"({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})",
                             R"({"type": "array", "items": {"$ref": "#"}, "minItems": 1})"}) {
    auto gbnf = JsonSchemaToGbnf(OJson::parse(schema));
    ASSERT_TRUE(gbnf.ok()) << schema << gbnf.status().ToString();
    auto g = CompileGbnf(*gbnf);
    EXPECT_FALSE(g.ok()) << schema;
  }
  // A cycle through anyOf: either refused, or a grammar for what it means.
  auto gbnf = JsonSchemaToGbnf(OJson::parse(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})"));
  ASSERT_TRUE(gbnf.ok());
  auto g = CompileGbnf(*gbnf);
  if (g.ok()) {
    EXPECT_TRUE(Accepts(**g, "null"));
    EXPECT_FALSE(Accepts(**g, "1"));
  }
}

// Random damage to the corpus schemas: every result is a grammar that
// compiles or InvalidArgument from one of the two steps; nothing crashes.
TEST(JsonSchemaToGbnfTest, MutatedSchemasGiveGrammarsOrErrors) {
  const std::vector<OJson> pool = {OJson(-1), OJson(0), OJson(2.5), OJson("x"), OJson("^a+$"), OJson(nullptr),
                                   OJson(true), OJson(false), OJson::array(), OJson::object(),
                                   OJson::parse(R"({"$ref": "#"})"), OJson::parse(R"({"type": "object"})"),
                                   OJson::parse(R"(["a", 1])"), OJson(100000)};
  std::mt19937 rng(7);
  int converted = 0, refused = 0;
  for (const auto& e : std::filesystem::directory_iterator(
           std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/sampling/grammar/schemas")) {
    std::ifstream in(e.path());
    const OJson doc = OJson::parse(in);
    for (int round = 0; round < 20; ++round) {
      OJson schema = doc["schema"];
      // Collect the JSON pointers of every node, damage one.
      std::vector<OJson::json_pointer> nodes;
      std::function<void(const OJson&, const OJson::json_pointer&)> walk = [&](const OJson& v, const OJson::json_pointer& p) {
        nodes.push_back(p);
        if (v.is_object()) for (const auto& [k, x] : v.items()) walk(x, p / k);
        if (v.is_array()) for (size_t i = 0; i < v.size(); ++i) walk(v[i], p / i);
      };
      walk(schema, OJson::json_pointer());
      const auto& target = nodes[rng() % nodes.size()];
      if (target.empty() || rng() % 3 != 0) {
        schema[target] = pool[rng() % pool.size()];
      } else {
        const std::string key = target.back();
        OJson& parent = schema[target.parent_pointer()];
        if (parent.is_object()) parent.erase(key);
      }
      auto gbnf = JsonSchemaToGbnf(schema);
      if (!gbnf.ok()) {
        EXPECT_EQ(gbnf.status().code(), StatusCode::kInvalidArgument);
        ++refused;
        continue;
      }
      auto g = CompileGbnf(*gbnf);
      if (g.ok()) ++converted;
      else EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << schema.dump();
    }
  }
  EXPECT_GT(converted, 100);
  EXPECT_GT(refused, 50);
}

}  // namespace
}  // namespace pagoda::grammar
