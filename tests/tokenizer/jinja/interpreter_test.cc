// Statements, scoping, macros, expressions and limits.
#include "tokenizer/jinja/interpreter.h"

#include <gtest/gtest.h>

#include "tokenizer/jinja/render_util.h"

namespace pagoda::jinja {
namespace {

using jinja_test::IsError;
using jinja_test::Render;
using Json = nlohmann::ordered_json;

TEST(InterpreterTest, IfElifElse) {
  const std::string t = "{% if x > 2 %}big{% elif x > 0 %}small{% else %}none{% endif %}";
  EXPECT_EQ(Render(t, {{"x", 5}}), "big");
  EXPECT_EQ(Render(t, {{"x", 1}}), "small");
  EXPECT_EQ(Render(t, {{"x", 0}}), "none");
}

TEST(InterpreterTest, ForLoopVariables) {
  EXPECT_EQ(Render("{% for x in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.length }}{{ 'F' if loop.first }}{{ 'L' if loop.last }}|{% endfor %}",
                   {{"items", {"a", "b"}}}),
            "10212F|21102L|");
  EXPECT_EQ(Render("{% for x in items %}{{ loop.previtem }}>{{ x }}>{{ loop.nextitem }};{% endfor %}",
                   {{"items", {1, 2, 3}}}),
            ">1>2;1>2>3;2>3>;");
  EXPECT_EQ(Render("{% for x in items %}{{ loop.cycle('a', 'b') }}{% endfor %}", {{"items", {1, 2, 3}}}), "aba");
}

TEST(InterpreterTest, ForElseRunsOnlyWhenEmpty) {
  const std::string t = "{% for x in items %}{{ x }}{% else %}empty{% endfor %}";
  EXPECT_EQ(Render(t, {{"items", Json::array()}}), "empty");
  EXPECT_EQ(Render(t, {{"items", {1}}}), "1");
  EXPECT_EQ(Render(t), "empty");  // undefined iterates as empty
}

TEST(InterpreterTest, ForLoopFilterCountsOnlyKeptItems) {
  EXPECT_EQ(Render("{% for x in items if x % 2 %}{{ x }}/{{ loop.length }} {% endfor %}", {{"items", {1, 2, 3, 4, 5}}}),
            "1/3 3/3 5/3 ");
}

TEST(InterpreterTest, ForUnpacksPairsAndIteratesDictKeysAndStrings) {
  EXPECT_EQ(Render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}), "b=1;a=2;");
  EXPECT_EQ(Render("{% for k in d %}{{ k }}{% endfor %}", {{"d", {{"x", 1}, {"y", 2}}}}), "xy");
  EXPECT_EQ(Render("{% for c in 'h\xC3\xA9' %}[{{ c }}]{% endfor %}"), "[h][\xC3\xA9]");
  EXPECT_TRUE(IsError(Render("{% for a, b in [[1, 2, 3]] %}{% endfor %}")));
  EXPECT_TRUE(IsError(Render("{% for x in 5 %}{% endfor %}")));
}

TEST(InterpreterTest, BreakAndContinue) {
  EXPECT_EQ(Render("{% for x in range(10) %}{% if x == 4 %}{% break %}{% endif %}{% if x % 2 %}{% continue %}{% endif %}"
                   "{{ x }}{% endfor %}"),
            "02");
}

TEST(InterpreterTest, SetInsideLoopDoesNotLeakButNamespaceDoes) {
  EXPECT_EQ(Render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(Render("{% set ns = namespace(x=1, y='a') %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}"
                   "{{ ns.x }}{{ ns.y }}"),
            "4a");
  // Within one loop, assignments persist from one iteration to the next.
  EXPECT_EQ(Render("{% for i in [1, 2, 3] %}{% if not loop.first %}{{ prev }}{% endif %}{% set prev = i %}{% endfor %}"),
            "12");
  EXPECT_TRUE(IsError(Render("{% set x = 1 %}{% set x.y = 2 %}")));
}

TEST(InterpreterTest, SetForms) {
  EXPECT_EQ(Render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(Render("{% set t = 1, 2 %}{{ t | length }}"), "2");
  EXPECT_EQ(Render("{% set block %}x{{ 1 + 1 }}{% endset %}[{{ block }}]"), "[x2]");
  EXPECT_EQ(Render("{% set ns = namespace({'a': 1}) %}{{ ns.a }}"), "1");
}

TEST(InterpreterTest, MacrosWithDefaultsKeywordsAndCaller) {
  EXPECT_EQ(Render("{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, c=3) }}|{{ m(1, 2, 3) }}"),
            "1BNone|1B3|123");
  EXPECT_EQ(Render("{% macro w(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call w('b') %}hi{% endcall %}"),
            "<b>hi</b>");
  EXPECT_EQ(Render("{% macro v() %}{{ varargs | length }}{{ kwargs.k }}{% endmacro %}{{ v(1, 2, k='x') }}"), "2x");
  // Macros see the scope they were defined in.
  EXPECT_EQ(Render("{% set g = 'G' %}{% macro m() %}{{ g }}{% endmacro %}{{ m() }}"), "G");
}

TEST(InterpreterTest, FilterBlock) {
  EXPECT_EQ(Render("{% filter upper | trim %}  abc  {% endfilter %}"), "ABC");
}

TEST(InterpreterTest, GenerationBlockRendersItsBody) {
  EXPECT_EQ(Render("a{% generation %}b{% endgeneration %}c"), "abc");
}

TEST(InterpreterTest, UndefinedIsFalsyPrintsEmptyAndPropagates) {
  EXPECT_EQ(Render("[{{ nope }}][{{ nope.attr.deeper }}][{{ nope['k'] }}]{{ 'F' if not nope }}"), "[][][]F");
  EXPECT_EQ(Render("{{ x is defined }}{{ x.y is undefined }}{{ m.missing is defined }}", {{"m", Json::object()}}),
            "FalseTrueFalse");
  EXPECT_EQ(Render("{{ 'yes' if 'a' in nope else 'no' }}"), "no");
}

TEST(InterpreterTest, AndOrReturnOperandsAndShortCircuit) {
  EXPECT_EQ(Render("{{ 0 or 'x' }}{{ 'a' and 'b' }}{{ [] or 'e' }}{{ none and undefined_fn() }}"), "xbeNone");
  EXPECT_EQ(Render("{{ true or undefined_fn() }}"), "True");
}

TEST(InterpreterTest, TernaryWithoutElseIsUndefined) {
  EXPECT_EQ(Render("[{{ 'a' if false }}]{{ 'a' if 1 > 0 else 'b' }}"), "[]a");
}

TEST(InterpreterTest, OperatorPrecedence) {
  EXPECT_EQ(Render("{{ items | length - 1 }}", {{"items", {1, 2, 3}}}), "2");
  EXPECT_EQ(Render("{{ not x is defined }}"), "True");
  EXPECT_EQ(Render("{{ 1 + 2 * 3 ** 2 }}{{ -2 ** 2 }}{{ (1 + 2) * 3 }}"), "1949");  // -2 ** 2 is (-2) ** 2 in Jinja
  EXPECT_EQ(Render("{{ 'a' ~ 2 * 3 }}"), "a6");
  EXPECT_TRUE(IsError(Render("{{ 'a' ~ 1 + 2 }}")));  // ~ binds tighter than +: ('a' ~ 1) + 2
  EXPECT_EQ(Render("{{ 1 < 2 and 2 > 3 or 'z' }}"), "z");
  EXPECT_EQ(Render("{{ 'x' + m.content | trim + 'y' }}", {{"m", {{"content", " c "}}}}), "xcy");
}

TEST(InterpreterTest, ListsDictsAndSubscripts) {
  EXPECT_EQ(Render("{{ [1, 2, 3][1] }}{{ [1, 2, 3][-1] }}{{ {'a': 1}['a'] }}{{ {'a': 1}.a }}{{ 'abc'[0] }}{{ [1, 2].0 }}"),
            "2311a1");
}

TEST(InterpreterTest, Slicing) {
  EXPECT_EQ(Render("{{ [1, 2, 3, 4][1:3] }}{{ [1, 2, 3][::-1] }}{{ 'hello'[1:] }}{{ 'hello'[::-1] }}{{ 'h\xC3\xA9llo'[:2] }}"),
            "[2, 3][3, 2, 1]elloollehh\xC3\xA9");
  EXPECT_EQ(Render("{{ [1, 2, 3, 4, 5][-2:] }}{{ [1, 2, 3, 4, 5][::2] }}{{ [1, 2, 3][5:] }}{{ [1, 2, 3][:-1] }}"),
            "[4, 5][1, 3, 5][][1, 2]");
  EXPECT_TRUE(IsError(Render("{{ [1][::0] }}")));
}

TEST(InterpreterTest, StrftimeNowUsesTheInjectedClock) {
  ChatTemplateOptions o;
  o.now = [] {
    std::tm tm{};
    tm.tm_year = 2024 - 1900;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    tm.tm_hour = 9;
    tm.tm_min = 5;
    return tm;
  };
  EXPECT_EQ(Render("{{ strftime_now('%d %b %Y %H:%M') }}", Json::object(), o), "26 Jul 2024 09:05");
}

TEST(InterpreterTest, RaiseExceptionIsAnError) {
  const std::string r = Render("{{ raise_exception('roles must alternate') }}");
  EXPECT_TRUE(IsError(r));
  EXPECT_NE(r.find("roles must alternate"), std::string::npos) << r;
}

TEST(InterpreterTest, RuntimeErrorsAreStatuses) {
  EXPECT_TRUE(IsError(Render("{{ 1 + 'a' }}")));
  EXPECT_TRUE(IsError(Render("{{ 1 / 0 }}")));
  EXPECT_TRUE(IsError(Render("{{ 1 // 0 }}")));
  EXPECT_TRUE(IsError(Render("{{ nope() }}")));
  EXPECT_TRUE(IsError(Render("{{ 'a' < 1 }}")));
  EXPECT_TRUE(IsError(Render("{{ x | no_such_filter }}")));
  EXPECT_TRUE(IsError(Render("{{ x is no_such_test }}")));
  EXPECT_TRUE(IsError(Render("{{ 9223372036854775807 + 1 }}")));
  EXPECT_TRUE(IsError(Render("{{ 'a'.nomethod() }}")));
}

TEST(InterpreterTest, SyntaxErrorsAreStatuses) {
  for (const char* bad : {"{% if x %}", "{% for x in y %}", "{% endif %}", "{% bogus %}", "{{ }}", "{{ (1 }}",
                          "{{ [1, 2 }}", "{% set %}", "{% macro m( %}{% endmacro %}", "{% for in x %}{% endfor %}",
                          "{{ a b }}", "{% if x %}{% else %}{% else %}{% endif %}", "{% break x %}"}) {
    EXPECT_TRUE(IsError(Render(bad))) << bad;
  }
}

TEST(InterpreterTest, DeepNestingIsASyntaxErrorNotACrash) {
  EXPECT_TRUE(IsError(Render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}")));
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  EXPECT_TRUE(IsError(Render(ifs)));
}

TEST(InterpreterTest, LimitsStopRunawayTemplates) {
  ChatTemplateOptions o;
  o.max_steps = 10'000;
  const std::string loops = Render("{% for i in range(1000) %}{% for j in range(1000) %}x{% endfor %}{% endfor %}",
                                   Json::object(), o);
  EXPECT_NE(loops.find("RESOURCE_EXHAUSTED"), std::string::npos) << loops;

  const std::string recursion = Render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(recursion.find("RESOURCE_EXHAUSTED"), std::string::npos) << recursion;

  ChatTemplateOptions small;
  small.max_output_bytes = 1000;
  const std::string big = Render("{% for i in range(100) %}0123456789abcdef{% endfor %}", Json::object(), small);
  EXPECT_NE(big.find("RESOURCE_EXHAUSTED"), std::string::npos) << big;
  const std::string doubling = Render("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                                      "{% endfor %}",
                                      Json::object(), small);
  EXPECT_NE(doubling.find("RESOURCE_EXHAUSTED"), std::string::npos) << doubling;
  EXPECT_TRUE(IsError(Render("{{ range(100000000) | length }}")));
  EXPECT_TRUE(IsError(Render("{{ 'x' * 1000000000 }}")));
}

}  // namespace
}  // namespace pagoda::jinja
