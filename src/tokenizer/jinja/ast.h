// The syntax tree the parser builds and the interpreter walks. Nodes are owned
// by their parent through unique_ptr; the Program owns the root. A tree is
// immutable after parsing, so one parsed template can render on many threads.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace pagoda::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // value
    kName,      // name
    kList,      // items
    kTuple,     // items (a list at run time)
    kDict,      // items: key0, value0, key1, value1...
    kGetAttr,   // a.name: items[0], name
    kGetItem,   // a[b]: items[0], items[1]
    kSlice,     // a[b:c:d]: items[0..3], absent parts null
    kCall,      // f(args, key=...): items[0] callee, items[1..] args, kwargs
    kFilter,    // a | name(args): items[0] operand (null in a filter block), items[1..] args, kwargs
    kTest,      // a is [not] name(args): items[0] operand, items[1..] args; negate
    kUnary,     // op items[0]: op "not", "-", "+"
    kBinary,    // items[0] op items[1]: + - * / // % ** ~ == != < > <= >= in "not in" and or
    kTernary,   // items[0] if items[1] else items[2] (items[2] null: undefined)
  };
  Kind kind;
  int line = 0;
  std::string name;  // kName, kGetAttr, kFilter, kTest, kUnary/kBinary operator
  Value value;       // kLiteral
  bool negate = false;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// A macro or call-block parameter: name with an optional default.
struct Param {
  std::string name;
  ExprPtr default_value;
};

struct Stmt {
  enum class Kind {
    kText,       // text
    kOutput,     // {{ expr }}
    kIf,         // conds[i] -> bodies[i]; bodies.back() is the else body when bodies > conds
    kFor,        // for targets in expr [if cond]: bodies[0], else bodies[1]
    kSet,        // set targets = expr | set target.attr = expr | {% set x %}bodies[0]{% endset %}
    kMacro,      // macro name(params): bodies[0]
    kCallBlock,  // call(params) expr: bodies[0] is `caller`
    kFilterBlock,  // filter expr (a kFilter with a null operand): bodies[0]
    kBreak,
    kContinue,
  };
  Kind kind;
  int line = 0;
  std::string text;                  // kText; kMacro name; kSet attribute when `attr_target`
  bool attr_target = false;          // set ns.attr = ...
  std::vector<std::string> targets;  // kFor / kSet names
  ExprPtr expr;                      // kOutput, kFor iterable, kSet value, kCallBlock call, kFilterBlock
  ExprPtr cond;                      // kFor filter
  std::vector<ExprPtr> conds;        // kIf
  std::vector<Body> bodies;
  std::vector<Param> params;         // kMacro, kCallBlock
};

struct Program {
  Body body;
};

}  // namespace pagoda::jinja
