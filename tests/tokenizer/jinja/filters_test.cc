// Filters, tests, str/dict methods and operators.
#include <gtest/gtest.h>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/render_util.h"

namespace pagoda::jinja {
namespace {

using jinja_test::IsError;
using jinja_test::Render;
using Json = nlohmann::ordered_json;

TEST(FiltersTest, StringFilters) {
  EXPECT_EQ(Render("{{ '  a b \n' | trim }}|{{ 'xxaxx' | trim('x') }}"), "a b|a");
  EXPECT_EQ(Render("{{ 'abc' | upper }}{{ 'ABC' | lower }}"), "ABCabc");
  EXPECT_EQ(Render("{{ '\xC3\xA9t\xC3\xA9' | upper }}"), "\xC3\x89T\xC3\x89");  // Unicode case mapping
  EXPECT_EQ(Render("{{ 'hello wORLD-x (y' | title }}"), "Hello World-X (Y");
  EXPECT_EQ(Render("{{ 'hELLO world' | capitalize }}"), "Hello world");
  EXPECT_EQ(Render("{{ 'a-b-c' | replace('-', '+') }}{{ 'a-b-c' | replace('-', '', 1) }}"), "a+b+cab-c");
  EXPECT_EQ(Render("{{ none | trim }}{{ 5 | string }}{{ true | string }}"), "None5True");
}

TEST(FiltersTest, LengthFirstLastJoin) {
  EXPECT_EQ(Render("{{ 'h\xC3\xA9' | length }}{{ [1, 2] | count }}{{ {'a': 1} | length }}{{ nope | length }}"), "2210");
  EXPECT_EQ(Render("{{ [1, 2, 3] | first }}{{ [1, 2, 3] | last }}{{ 'abc' | last }}[{{ [] | first }}]"), "13c[]");
  EXPECT_EQ(Render("{{ [1, 'a', none] | join(', ') }}|{{ 'abc' | join('-') }}|{{ [1, 2] | join }}"), "1, a, None|a-b-c|12");
  EXPECT_EQ(Render("{{ users | join(',', attribute='name') }}", {{"users", {{{"name", "a"}}, {{"name", "b"}}}}}), "a,b");
}

TEST(FiltersTest, DefaultFilter) {
  EXPECT_EQ(Render("{{ nope | default('d') }}{{ '' | default('d') }}{{ '' | default('d', true) }}{{ none | d('x') }}"),
            "ddNone");
  EXPECT_EQ(Render("[{{ nope | default }}]"), "[]");
}

TEST(FiltersTest, TojsonMatchesPythonJsonDumps) {
  const Json ctx = {{"v", {{"b", 1}, {"a", {1.5, true, nullptr, "caf\xC3\xA9 \"q\"\n"}}}}};
  EXPECT_EQ(Render("{{ v | tojson }}", ctx), R"({"b": 1, "a": [1.5, true, null, "café \"q\"\n"]})");
  EXPECT_EQ(Render("{{ v | tojson(indent=2) }}", ctx),
            "{\n  \"b\": 1,\n  \"a\": [\n    1.5,\n    true,\n    null,\n    \"caf\xC3\xA9 \\\"q\\\"\\n\"\n  ]\n}");
  EXPECT_EQ(Render("{{ v | tojson(ensure_ascii=true, sort_keys=true) }}", ctx),
            R"({"a": [1.5, true, null, "caf\u00e9 \"q\"\n"], "b": 1})");
  EXPECT_EQ(Render("{{ v | tojson(separators=(',', ':')) }}", ctx), R"({"b":1,"a":[1.5,true,null,"café \"q\"\n"]})");
  EXPECT_EQ(Render("{{ [] | tojson(indent=4) }}{{ {} | tojson }}{{ 2.0 | tojson }}{{ '\U0001F600' | tojson(ensure_ascii=true) }}"),
            "[]{}2.0\"\\ud83d\\ude00\"");
}

TEST(FiltersTest, NumberFilters) {
  EXPECT_EQ(Render("{{ '42' | int }}{{ '3.7' | int }}{{ 'x' | int }}{{ 'x' | int(7) }}{{ 3.9 | int }}{{ true | int }}"),
            "4230731");
  EXPECT_EQ(Render("{{ '2.5' | float }}{{ 3 | float }}{{ 'x' | float }}{{ -3 | abs }}{{ 2.567 | round(2) }}"),
            "2.53.00.032.57");
}

TEST(FiltersTest, CollectionFilters) {
  const Json ctx = {{"msgs",
                     {{{"role", "system"}, {"content", "s"}},
                      {{"role", "user"}, {"content", "u"}},
                      {{"role", "assistant"}, {"content", ""}}}},
                    {"d", {{"b", 2}, {"a", 1}}}};
  EXPECT_EQ(Render("{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}", ctx), "['u']");
  EXPECT_EQ(Render("{{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='role') | join(',') }}", ctx),
            "system,assistant");
  EXPECT_EQ(Render("{{ msgs | selectattr('content') | length }}", ctx), "2");
  EXPECT_EQ(Render("{{ msgs | map(attribute='missing', default='?') | join }}", ctx), "???");
  EXPECT_EQ(Render("{{ ['a', 'b'] | map('upper') | join }}{{ [1, 2, 3, 4] | select('odd') | list }}", ctx), "AB[1, 3]");
  EXPECT_EQ(Render("{{ d | items | list }}{{ d | dictsort }}", ctx), "[['b', 2], ['a', 1]][['a', 1], ['b', 2]]");
  EXPECT_EQ(Render("{{ [3, 1, 2] | sort }}{{ [3, 1, 2] | sort(reverse=true) }}{{ [1, 2] | reverse | list }}", ctx),
            "[1, 2, 3][3, 2, 1][2, 1]");
  EXPECT_EQ(Render("{{ msgs | sort(attribute='role') | map(attribute='role') | first }}", ctx), "assistant");
  EXPECT_EQ(Render("{{ [1, 2, 1, 3] | unique | list }}{{ 'ab' | list }}{{ nope | items | length }}", ctx),
            "[1, 2, 3]['a', 'b']0");
}

TEST(FiltersTest, IndentAndSafe) {
  EXPECT_EQ(Render("{{ 'a\nb\n\nc' | indent(2) }}"), "a\n  b\n\n  c");
  EXPECT_EQ(Render("{{ 'a\nb' | indent(2, first=true) }}"), "  a\n  b");
  EXPECT_EQ(Render("{{ '<b>' | safe }}{{ '<b>' | e }}"), "<b><b>");
}

TEST(FiltersTest, Tests) {
  EXPECT_EQ(Render("{{ none is none }}{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ 'a' is string }}"),
            "TrueTrueTrueTrueTrue");
  EXPECT_EQ(Render("{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is iterable }}{{ [] is sequence }}{{ 1 is iterable }}"),
            "TrueTrueTrueTrueFalse");
  EXPECT_EQ(Render("{{ true is boolean }}{{ true is true }}{{ false is false }}{{ 1 is true }}{{ 0 is false }}"),
            "TrueTrueTrueFalseFalse");
  EXPECT_EQ(Render("{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 1 is eq 1 }}{{ 2 is ne(1) }}"),
            "TrueTrueTrueTrueTrue");
  EXPECT_EQ(Render("{{ 1 is lt 2 }}{{ 2 is ge 2 }}{{ 'a' is in 'cat' }}{{ 'abc' is lower }}{{ 'ABC' is upper }}"),
            "TrueTrueTrueTrueTrue");
  EXPECT_EQ(Render("{{ range is callable }}{{ x is not defined }}{{ none is sameas none }}"), "TrueTrueTrue");
}

TEST(FiltersTest, StringMethods) {
  EXPECT_EQ(Render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'bc')) }}{{ 'abc'.startswith('z') }}"),
            "TrueTrueFalse");
  EXPECT_EQ(Render("{{ 'a,b,,c'.split(',') }}{{ '  a  b '.split() }}{{ 'a,b,c'.split(',', 1) }}"),
            "['a', 'b', '', 'c']['a', 'b']['a', 'b,c']");
  // Python's strip(chars): only those characters (Qwen3's .lstrip('\n')).
  EXPECT_EQ(Render("[{{ '\n\n  x \n'.strip('\n') }}][{{ '\nx'.lstrip('\n') }}][{{ ' x '.rstrip() }}][{{ ' x '.strip() }}]"),
            "[  x ][x][ x][x]");
  EXPECT_EQ(Render("{{ 'aXbX'.replace('X', '-') }}{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ 'ab cd'.title() }}"),
            "a-b-ABabAb Cd");
  EXPECT_EQ(Render("{{ 'hello'.find('l') }}{{ 'hello'.count('l') }}{{ ', '.join(['a', 'b']) }}"), "22a, b");
  EXPECT_EQ(Render("{{ 'a\nb\n'.splitlines() }}"), "['a', 'b']");
}

TEST(FiltersTest, DictMethods) {
  const Json ctx = {{"d", {{"a", 1}, {"get", "key named get"}}}};
  EXPECT_EQ(Render("{{ d.get('a') }}{{ d.get('z') }}{{ d.get('z', 5) }}{{ d.keys() | list }}{{ d.values() | first }}", ctx),
            "1None5['a', 'get']1");
  EXPECT_EQ(Render("{{ d.items() | first }}{{ d.get }}", ctx), "['a', 1]key named get");  // tuples print as lists
}

TEST(FiltersTest, Operators) {
  EXPECT_EQ(Render("{{ 7 // 2 }}{{ -7 // 2 }}{{ -7 % 3 }}{{ 7 / 2 }}{{ 2 ** 10 }}{{ 1 + 1.5 }}{{ true + 1 }}"),
            "3-423.510242.52");
  EXPECT_EQ(Render("{{ 'ab' + 'cd' }}{{ [1] + [2] }}{{ 'ab' * 2 }}{{ 'x' ~ none ~ 1 }}"), "abcd[1, 2]ababxNone1");
  EXPECT_EQ(Render("{{ 1 == 1.0 }}{{ [1, {'a': 2}] == [1, {'a': 2}] }}{{ 'a' != 'b' }}{{ 1 == '1' }}{{ none == none }}"),
            "TrueTrueTrueFalseTrue");
  EXPECT_EQ(Render("{{ 'b' > 'a' }}{{ [1, 2] < [1, 3] }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 'x' not in 'abc' }}"),
            "TrueTrueTrueTrueTrue");
}

}  // namespace
}  // namespace pagoda::jinja
