#include "tokenizer/jinja/parser.h"

#include <cstdlib>
#include <initializer_list>

#include "tokenizer/jinja/error.h"

namespace pagoda::jinja {
namespace {

using T = Token::Type;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  std::unique_ptr<Program> Run() {
    auto program = std::make_unique<Program>();
    const std::string end = ParseBody(&program->body, {});
    if (!end.empty()) Fail("unexpected '{% " + end + " %}'");
    return program;
  }

 private:
  // Depth guard for recursive descent: deep nesting is an error, not a crash.
  struct Deeper {
    explicit Deeper(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxParseDepth) p_->Fail("nesting too deep");
    }
    ~Deeper() { --p_->depth_; }
    Parser* p_;
  };

  const Token& Peek(size_t ahead = 0) const {
    const size_t i = pos_ + ahead;
    return i < toks_.size() ? toks_[i] : toks_.back();
  }
  const Token& Next() {
    const Token& t = Peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool IsOp(const char* op, size_t ahead = 0) const { return Peek(ahead).type == T::kOp && Peek(ahead).text == op; }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).type == T::kName && Peek(ahead).text == name;
  }
  bool AcceptOp(const char* op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool AcceptName(const char* name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }
  [[noreturn]] void Fail(const std::string& what) const {
    throw JinjaError("template syntax error at line " + std::to_string(Peek().line) + ": " + what);
  }
  std::string Describe(const Token& t) const {
    if (t.type == T::kEof) return "end of template";
    if (t.type == T::kBlockEnd || t.type == T::kVarEnd) return "'" + t.text + "'";
    return "'" + t.text + "'";
  }
  void ExpectOp(const char* op) {
    if (!AcceptOp(op)) Fail(std::string("expected '") + op + "', got " + Describe(Peek()));
  }
  std::string ExpectName() {
    if (Peek().type != T::kName) Fail("expected a name, got " + Describe(Peek()));
    return Next().text;
  }
  void ExpectBlockEnd() {
    if (Peek().type != T::kBlockEnd) Fail("expected '%}', got " + Describe(Peek()));
    Next();
  }

  // Statements until a block tag whose keyword is in `ends` (consumed up to
  // and including the keyword); returns that keyword, or "" at end of input.
  std::string ParseBody(Body* body, std::initializer_list<const char*> ends) {
    Deeper guard(this);
    while (true) {
      const Token& t = Peek();
      if (t.type == T::kEof) {
        if (ends.size() != 0) Fail(std::string("unexpected end of template, expected '{% ") + *ends.begin() + " %}'");
        return "";
      }
      if (t.type == T::kText) {
        auto s = NewStmt(Stmt::Kind::kText);
        s->text = Next().text;
        body->push_back(std::move(s));
      } else if (t.type == T::kVarBegin) {
        Next();
        auto s = NewStmt(Stmt::Kind::kOutput);
        s->expr = ParseTupleOrExpr();
        if (Peek().type != T::kVarEnd) Fail("expected '}}', got " + Describe(Peek()));
        Next();
        body->push_back(std::move(s));
      } else if (t.type == T::kBlockBegin) {
        const Token& kw = Peek(1);
        if (kw.type != T::kName) Fail("expected a statement name after '{%'");
        for (const char* e : ends) {
          if (kw.text == e) {
            Next();
            Next();
            return kw.text;
          }
        }
        Next();
        ParseStatement(body);
      } else {
        Fail("unexpected " + Describe(t));
      }
    }
  }

  StmtPtr NewStmt(Stmt::Kind kind) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = Peek().line;
    return s;
  }

  void ParseStatement(Body* body) {
    const std::string kw = Next().text;
    if (kw == "if") {
      body->push_back(ParseIf());
    } else if (kw == "for") {
      body->push_back(ParseFor());
    } else if (kw == "set") {
      body->push_back(ParseSet());
    } else if (kw == "macro") {
      body->push_back(ParseMacro());
    } else if (kw == "call") {
      body->push_back(ParseCallBlock());
    } else if (kw == "filter") {
      auto s = NewStmt(Stmt::Kind::kFilterBlock);
      s->expr = ParseFilterChain(nullptr);
      ExpectBlockEnd();
      s->bodies.emplace_back();
      ParseBody(&s->bodies[0], {"endfilter"});
      ExpectBlockEnd();
      body->push_back(std::move(s));
    } else if (kw == "break" || kw == "continue") {
      body->push_back(NewStmt(kw == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue));
      ExpectBlockEnd();
    } else if (kw == "generation") {
      // transformers' {% generation %} marks assistant text for masks; it
      // renders its body unchanged.
      ExpectBlockEnd();
      ParseBody(body, {"endgeneration"});
      ExpectBlockEnd();
    } else {
      Fail("unknown statement '" + kw + "'");
    }
  }

  StmtPtr ParseIf() {
    auto s = NewStmt(Stmt::Kind::kIf);
    s->conds.push_back(ParseExpr());
    ExpectBlockEnd();
    while (true) {
      s->bodies.emplace_back();
      const std::string end = ParseBody(&s->bodies.back(), {"elif", "else", "endif"});
      if (end == "elif") {
        s->conds.push_back(ParseExpr());
        ExpectBlockEnd();
      } else if (end == "else") {
        ExpectBlockEnd();
        s->bodies.emplace_back();
        ParseBody(&s->bodies.back(), {"endif"});
        ExpectBlockEnd();
        return s;
      } else {
        ExpectBlockEnd();
        return s;
      }
    }
  }

  std::vector<std::string> ParseTargets() {
    std::vector<std::string> names;
    const bool paren = AcceptOp("(");
    do {
      names.push_back(ExpectName());
    } while (AcceptOp(","));
    if (paren) ExpectOp(")");
    return names;
  }

  StmtPtr ParseFor() {
    auto s = NewStmt(Stmt::Kind::kFor);
    s->targets = ParseTargets();
    if (!AcceptName("in")) Fail("expected 'in' in for loop");
    s->expr = ParseOr();  // no ternary: a trailing `if` filters the loop
    if (AcceptName("if")) s->cond = ParseExpr();
    if (AcceptName("recursive")) Fail("recursive for loops are not supported");
    ExpectBlockEnd();
    s->bodies.resize(1);
    const std::string end = ParseBody(&s->bodies[0], {"else", "endfor"});
    if (end == "else") {
      ExpectBlockEnd();
      s->bodies.emplace_back();
      ParseBody(&s->bodies[1], {"endfor"});
    }
    ExpectBlockEnd();
    return s;
  }

  StmtPtr ParseSet() {
    auto s = NewStmt(Stmt::Kind::kSet);
    const std::string first = ExpectName();
    if (AcceptOp(".")) {
      s->attr_target = true;
      s->targets.push_back(first);
      s->text = ExpectName();
    } else {
      s->targets.push_back(first);
      while (AcceptOp(",")) s->targets.push_back(ExpectName());
    }
    if (AcceptOp("=")) {
      s->expr = ParseTupleOrExpr();
      ExpectBlockEnd();
      return s;
    }
    if (s->targets.size() != 1 || s->attr_target) Fail("a block set takes one name");
    ExpectBlockEnd();
    s->bodies.resize(1);
    ParseBody(&s->bodies[0], {"endset"});
    ExpectBlockEnd();
    return s;
  }

  std::vector<Param> ParseParams() {
    std::vector<Param> params;
    ExpectOp("(");
    while (!IsOp(")")) {
      Param p;
      p.name = ExpectName();
      if (AcceptOp("=")) p.default_value = ParseExpr();
      params.push_back(std::move(p));
      if (!AcceptOp(",")) break;
    }
    ExpectOp(")");
    return params;
  }

  StmtPtr ParseMacro() {
    auto s = NewStmt(Stmt::Kind::kMacro);
    s->text = ExpectName();
    s->params = ParseParams();
    ExpectBlockEnd();
    s->bodies.resize(1);
    ParseBody(&s->bodies[0], {"endmacro"});
    if (Peek().type == T::kName) Next();  // {% endmacro name %}
    ExpectBlockEnd();
    return s;
  }

  StmtPtr ParseCallBlock() {
    auto s = NewStmt(Stmt::Kind::kCallBlock);
    if (IsOp("(")) s->params = ParseParams();
    s->expr = ParseExpr();
    if (s->expr->kind != Expr::Kind::kCall) Fail("expected a macro call after 'call'");
    ExpectBlockEnd();
    s->bodies.resize(1);
    ParseBody(&s->bodies[0], {"endcall"});
    ExpectBlockEnd();
    return s;
  }

  // ---- expressions ----

  ExprPtr NewExpr(Expr::Kind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = Peek().line;
    return e;
  }

  // `a, b` outside brackets is a tuple ({{ a, b }}, {% set x = 1, 2 %}).
  ExprPtr ParseTupleOrExpr() {
    ExprPtr first = ParseExpr();
    if (!IsOp(",")) return first;
    auto t = NewExpr(Expr::Kind::kTuple);
    t->items.push_back(std::move(first));
    while (AcceptOp(",")) {
      if (Peek().type == T::kBlockEnd || Peek().type == T::kVarEnd) break;
      t->items.push_back(ParseExpr());
    }
    return t;
  }

  ExprPtr ParseExpr() {
    Deeper guard(this);
    ExprPtr e = ParseOr();
    while (IsName("if")) {
      Next();
      auto t = NewExpr(Expr::Kind::kTernary);
      t->items.push_back(std::move(e));
      t->items.push_back(ParseOr());
      t->items.push_back(AcceptName("else") ? ParseExpr() : nullptr);
      e = std::move(t);
    }
    return e;
  }

  ExprPtr Binary(std::string op, ExprPtr a, ExprPtr b) {
    auto e = NewExpr(Expr::Kind::kBinary);
    e->name = std::move(op);
    e->items.push_back(std::move(a));
    e->items.push_back(std::move(b));
    return e;
  }

  ExprPtr ParseOr() {
    ExprPtr e = ParseAnd();
    while (AcceptName("or")) e = Binary("or", std::move(e), ParseAnd());
    return e;
  }
  ExprPtr ParseAnd() {
    ExprPtr e = ParseNot();
    while (AcceptName("and")) e = Binary("and", std::move(e), ParseNot());
    return e;
  }
  ExprPtr ParseNot() {
    if (IsName("not")) {
      Deeper guard(this);
      Next();
      auto e = NewExpr(Expr::Kind::kUnary);
      e->name = "not";
      e->items.push_back(ParseNot());
      return e;
    }
    return ParseCompare();
  }
  ExprPtr ParseCompare() {
    ExprPtr e = ParseMath1();
    while (true) {
      if (Peek().type == T::kOp && (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" ||
                                    Peek().text == ">" || Peek().text == "<=" || Peek().text == ">=")) {
        const std::string op = Next().text;
        e = Binary(op, std::move(e), ParseMath1());
      } else if (IsName("in")) {
        Next();
        e = Binary("in", std::move(e), ParseMath1());
      } else if (IsName("not") && IsName("in", 1)) {
        Next();
        Next();
        e = Binary("not in", std::move(e), ParseMath1());
      } else {
        return e;
      }
    }
  }
  ExprPtr ParseMath1() {
    ExprPtr e = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const std::string op = Next().text;
      e = Binary(op, std::move(e), ParseConcat());
    }
    return e;
  }
  ExprPtr ParseConcat() {
    ExprPtr e = ParseMath2();
    while (AcceptOp("~")) e = Binary("~", std::move(e), ParseMath2());
    return e;
  }
  ExprPtr ParseMath2() {
    ExprPtr e = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const std::string op = Next().text;
      e = Binary(op, std::move(e), ParsePow());
    }
    return e;
  }
  ExprPtr ParsePow() {
    ExprPtr e = ParseUnary(true);
    while (AcceptOp("**")) e = Binary("**", std::move(e), ParseUnary(true));
    return e;
  }
  ExprPtr ParseUnary(bool with_filter) {
    Deeper guard(this);
    ExprPtr e;
    if (IsOp("-") || IsOp("+")) {
      auto u = NewExpr(Expr::Kind::kUnary);
      u->name = Next().text;
      u->items.push_back(ParseUnary(false));
      e = std::move(u);
    } else {
      e = ParsePostfix(ParsePrimary());
    }
    if (with_filter) return ParseFilterChain(std::move(e));
    return e;
  }

  // Filters (`| name(args)`) and tests (`is [not] name args`), left to right.
  ExprPtr ParseFilterChain(ExprPtr e) {
    const bool block = e == nullptr;  // {% filter upper %}: the operand is the body
    bool first = true;
    while (true) {
      if ((block && first) || AcceptOp("|")) {
        first = false;
        auto f = NewExpr(Expr::Kind::kFilter);
        f->name = ExpectName();
        while (AcceptOp(".")) {
          f->name += '.';
          f->name += ExpectName();
        }
        f->items.push_back(std::move(e));
        if (IsOp("(")) ParseArgs(f.get());
        e = ParsePostfix(std::move(f));
      } else if (!block && IsName("is")) {
        Next();
        auto t = NewExpr(Expr::Kind::kTest);
        t->negate = AcceptName("not");
        t->name = ExpectName();
        t->items.push_back(std::move(e));
        if (IsOp("(")) {
          ParseArgs(t.get());
        } else if (StartsTestArg()) {
          t->items.push_back(ParsePostfix(ParsePrimary()));
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
  // `x is divisibleby 3`, `x is sameas none`: one bare argument.
  bool StartsTestArg() const {
    const Token& t = Peek();
    if (t.type == T::kString || t.type == T::kInt || t.type == T::kFloat) return true;
    if (t.type == T::kName) {
      for (const char* kw : {"else", "or", "and", "if", "in", "not", "is"}) {
        if (t.text == kw) return false;
      }
      return true;
    }
    return false;
  }

  // (a, b, key=c) into items (after those already there) and kwargs.
  void ParseArgs(Expr* call) {
    ExpectOp("(");
    while (!IsOp(")")) {
      if (Peek().type == T::kName && IsOp("=", 1)) {
        std::string key = Next().text;
        Next();
        call->kwargs.emplace_back(std::move(key), ParseExpr());
      } else {
        if (!call->kwargs.empty()) Fail("positional argument after keyword argument");
        call->items.push_back(ParseExpr());
      }
      if (!AcceptOp(",")) break;
    }
    ExpectOp(")");
  }

  ExprPtr ParsePostfix(ExprPtr e) {
    while (true) {
      if (AcceptOp(".")) {
        if (Peek().type == T::kInt) {  // a.0 is a[0]
          auto g = NewExpr(Expr::Kind::kGetItem);
          g->items.push_back(std::move(e));
          auto idx = NewExpr(Expr::Kind::kLiteral);
          idx->value = Value(static_cast<int64_t>(std::strtoll(Next().text.c_str(), nullptr, 10)));
          g->items.push_back(std::move(idx));
          e = std::move(g);
          continue;
        }
        auto g = NewExpr(Expr::Kind::kGetAttr);
        g->name = ExpectName();
        g->items.push_back(std::move(e));
        e = std::move(g);
      } else if (IsOp("[")) {
        Next();
        e = ParseSubscript(std::move(e));
      } else if (IsOp("(")) {
        auto c = NewExpr(Expr::Kind::kCall);
        c->items.push_back(std::move(e));
        ParseArgs(c.get());
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr ParseSubscript(ExprPtr obj) {
    ExprPtr parts[3];
    int colons = 0;
    if (!IsOp(":")) parts[0] = ParseExpr();
    while (colons < 2 && AcceptOp(":")) {
      ++colons;
      if (!IsOp(":") && !IsOp("]")) parts[colons] = ParseExpr();
    }
    ExpectOp("]");
    if (colons == 0) {
      auto g = NewExpr(Expr::Kind::kGetItem);
      g->items.push_back(std::move(obj));
      g->items.push_back(std::move(parts[0]));
      return g;
    }
    auto s = NewExpr(Expr::Kind::kSlice);
    s->items.push_back(std::move(obj));
    for (auto& p : parts) s->items.push_back(std::move(p));
    return s;
  }

  ExprPtr Literal(Value v) {
    auto e = NewExpr(Expr::Kind::kLiteral);
    e->value = std::move(v);
    return e;
  }

  ExprPtr ParsePrimary() {
    Deeper guard(this);
    const Token& t = Peek();
    switch (t.type) {
      case T::kString: {
        std::string s = Next().text;
        while (Peek().type == T::kString) s += Next().text;  // "a" "b" is "ab"
        return Literal(Value(std::move(s)));
      }
      case T::kInt: {
        const std::string text = Next().text;
        errno = 0;
        const long long v = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE) return Literal(Value(std::strtod(text.c_str(), nullptr)));
        return Literal(Value(static_cast<int64_t>(v)));
      }
      case T::kFloat: return Literal(Value(std::strtod(Next().text.c_str(), nullptr)));
      case T::kName: {
        const std::string name = Next().text;
        if (name == "true" || name == "True") return Literal(Value(true));
        if (name == "false" || name == "False") return Literal(Value(false));
        if (name == "none" || name == "None") return Literal(Value::None());
        auto e = NewExpr(Expr::Kind::kName);
        e->name = name;
        return e;
      }
      case T::kOp: {
        if (AcceptOp("(")) {
          if (AcceptOp(")")) return NewExpr(Expr::Kind::kTuple);
          ExprPtr first = ParseExpr();
          if (AcceptOp(")")) return first;
          auto tup = NewExpr(Expr::Kind::kTuple);
          tup->items.push_back(std::move(first));
          while (AcceptOp(",")) {
            if (IsOp(")")) break;
            tup->items.push_back(ParseExpr());
          }
          ExpectOp(")");
          return tup;
        }
        if (AcceptOp("[")) {
          auto list = NewExpr(Expr::Kind::kList);
          while (!IsOp("]")) {
            list->items.push_back(ParseExpr());
            if (!AcceptOp(",")) break;
          }
          ExpectOp("]");
          return list;
        }
        if (AcceptOp("{")) {
          auto dict = NewExpr(Expr::Kind::kDict);
          while (!IsOp("}")) {
            dict->items.push_back(ParseExpr());
            ExpectOp(":");
            dict->items.push_back(ParseExpr());
            if (!AcceptOp(",")) break;
          }
          ExpectOp("}");
          return dict;
        }
        break;
      }
      default: break;
    }
    Fail("unexpected " + Describe(t) + " in expression");
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

std::unique_ptr<Program> ParseTemplate(std::string_view source, const LexOptions& options) {
  return Parser(Tokenize(source, options)).Run();
}

}  // namespace pagoda::jinja
