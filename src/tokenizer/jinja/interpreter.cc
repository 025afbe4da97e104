#include "tokenizer/jinja/interpreter.h"

#include <string_view>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/globals.h"

namespace pagoda::jinja {
namespace {

constexpr size_t kMaxListItems = 1u << 20;

// One scope. Frames live in the Interpreter's arena for the whole render, so
// macros can point at the scope they were defined in without owning it.
struct Frame {
  explicit Frame(Frame* p) : parent(p) {}
  const Value* Lookup(std::string_view name) const {
    for (const Frame* f = this; f != nullptr; f = f->parent) {
      for (const auto& [k, v] : f->vars) {
        if (k == name) return &v;
      }
    }
    return nullptr;
  }
  void Set(const std::string& name, Value v) {
    for (auto& [k, old] : vars) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    vars.emplace_back(name, std::move(v));
  }
  Frame* parent;
  std::vector<std::pair<std::string, Value>> vars;
};

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  explicit Interpreter(const RenderOptions& o) : opt_(o) {}

  std::string Run(const Program& program, const Dict& context) {
    Frame* root = NewFrame(nullptr);
    AddGlobals(root);
    for (const auto& [k, v] : context) root->Set(k, v);
    std::string out;
    if (Exec(program.body, root, &out) != Flow::kNormal) throw JinjaError("break or continue outside a loop");
    return out;
  }

 private:
  Frame* NewFrame(Frame* parent) {
    frames_.push_back(std::make_unique<Frame>(parent));
    return frames_.back().get();
  }

  void Step() {
    if (++steps_ > opt_.limits.max_steps) {
      throw JinjaError("template exceeded " + std::to_string(opt_.limits.max_steps) + " evaluation steps",
                       StatusCode::kResourceExhausted);
    }
  }

  void CheckSize(size_t bytes) const {
    if (bytes > opt_.limits.max_output_bytes) {
      throw JinjaError("template output exceeds " + std::to_string(opt_.limits.max_output_bytes) + " bytes",
                       StatusCode::kResourceExhausted);
    }
  }

  // Strings and lists that grow without bound stop here.
  const Value& Checked(const Value& v) const {
    if (v.is_string()) CheckSize(v.as_string().size());
    if (v.is_list() && v.as_list().size() > kMaxListItems) {
      throw JinjaError("list exceeds " + std::to_string(kMaxListItems) + " items", StatusCode::kResourceExhausted);
    }
    return v;
  }

  void Append(std::string* out, std::string_view s) {
    CheckSize(out->size() + s.size());
    out->append(s);
  }

  [[noreturn]] static void Fail(int line, const std::string& what) {
    throw JinjaError("line " + std::to_string(line) + ": " + what);
  }

  void AddGlobals(Frame* root) {
    for (auto& [k, v] : GlobalFunctions(opt_)) root->Set(k, std::move(v));
  }

  // ---- statements ----

  Flow Exec(const Body& body, Frame* scope, std::string* out) {
    for (const StmtPtr& s : body) {
      const Flow f = ExecStmt(*s, scope, out);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow ExecStmt(const Stmt& s, Frame* scope, std::string* out) {
    Step();
    switch (s.kind) {
      case Stmt::Kind::kText: Append(out, s.text); return Flow::kNormal;
      case Stmt::Kind::kOutput: Append(out, Eval(*s.expr, scope).Str()); return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.conds.size(); ++i) {
          if (Eval(*s.conds[i], scope).Truthy()) return Exec(s.bodies[i], scope, out);
        }
        if (s.bodies.size() > s.conds.size()) return Exec(s.bodies.back(), scope, out);
        return Flow::kNormal;
      case Stmt::Kind::kFor: ExecFor(s, scope, out); return Flow::kNormal;
      case Stmt::Kind::kSet: ExecSet(s, scope); return Flow::kNormal;
      case Stmt::Kind::kMacro: scope->Set(s.text, MakeMacro(s.text, s.params, s.bodies[0], scope)); return Flow::kNormal;
      case Stmt::Kind::kCallBlock: {
        const Expr& call = *s.expr;
        const Value fn = Eval(*call.items[0], scope);
        CallArgs args = EvalArgs(call, 1, scope);
        args.keyword.emplace_back("caller", MakeMacro("caller", s.params, s.bodies[0], scope));
        Append(out, CallValue(fn, args, s.line).Str());
        return Flow::kNormal;
      }
      case Stmt::Kind::kFilterBlock: {
        std::string body;
        Exec(s.bodies[0], scope, &body);
        block_operand_ = Value(std::move(body));
        Append(out, Eval(*s.expr, scope).Str());
        return Flow::kNormal;
      }
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  void Bind(const std::vector<std::string>& targets, const Value& v, Frame* scope, int line) {
    if (targets.size() == 1) {
      scope->Set(targets[0], v);
      return;
    }
    const List items = Iterate(v);
    if (items.size() != targets.size()) {
      Fail(line, "cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()) + " names");
    }
    for (size_t i = 0; i < targets.size(); ++i) scope->Set(targets[i], items[i]);
  }

  void ExecFor(const Stmt& s, Frame* scope, std::string* out) {
    Frame* loop_scope = NewFrame(scope);
    List items = Iterate(Eval(*s.expr, scope));
    if (s.cond) {
      List kept;
      for (const Value& item : items) {
        Bind(s.targets, item, loop_scope, s.line);
        if (Eval(*s.cond, loop_scope).Truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      Dict loop = {{"index", Value(i + 1)},
                   {"index0", Value(i)},
                   {"revindex", Value(n - i)},
                   {"revindex0", Value(n - i - 1)},
                   {"first", Value(i == 0)},
                   {"last", Value(i == n - 1)},
                   {"length", Value(n)},
                   {"previtem", i > 0 ? items[i - 1] : Value()},
                   {"nextitem", i + 1 < n ? items[i + 1] : Value()},
                   {"cycle", Value::Callable("cycle", [i](const CallArgs& a) {
                      return a.positional.empty() ? Value() : a.positional[i % a.positional.size()];
                    })}};
      loop_scope->Set("loop", Value(std::move(loop)));
      Bind(s.targets, items[i], loop_scope, s.line);
      if (Exec(s.bodies[0], loop_scope, out) == Flow::kBreak) break;
    }
    if (n == 0 && s.bodies.size() > 1) Exec(s.bodies[1], loop_scope, out);
  }

  void ExecSet(const Stmt& s, Frame* scope) {
    Value v;
    if (s.expr) {
      v = Eval(*s.expr, scope);
    } else {
      std::string body;
      Exec(s.bodies[0], scope, &body);
      v = Value(std::move(body));
    }
    if (s.attr_target) {
      const Value* ns = scope->Lookup(s.targets[0]);
      if (ns == nullptr || !ns->is_namespace()) {
        Fail(s.line, "cannot assign attribute '" + s.text + "' on '" + s.targets[0] + "': not a namespace");
      }
      ns->SetAttr(s.text, std::move(v));
      return;
    }
    Bind(s.targets, v, scope, s.line);
  }

  Value MakeMacro(const std::string& name, const std::vector<Param>& params, const Body& body, Frame* defined_in) {
    return Value::Callable(name, [this, name, &params, &body, defined_in](const CallArgs& args) {
      if (++call_depth_ > opt_.limits.max_call_depth) {
        throw JinjaError("macro calls nested deeper than " + std::to_string(opt_.limits.max_call_depth),
                         StatusCode::kResourceExhausted);
      }
      Frame* frame = NewFrame(defined_in);
      List varargs;
      for (size_t i = params.size(); i < args.positional.size(); ++i) varargs.push_back(args.positional[i]);
      Dict kwargs;
      for (const auto& [k, v] : args.keyword) {
        bool is_param = k == "caller";
        for (const Param& p : params) is_param = is_param || p.name == k;
        if (k == "caller") frame->Set("caller", v);
        if (!is_param) kwargs.emplace_back(k, v);
      }
      frame->Set("varargs", Value(std::move(varargs)));
      frame->Set("kwargs", Value(std::move(kwargs)));
      for (size_t i = 0; i < params.size(); ++i) {
        const Value* given = args.Get(i, params[i].name);
        if (given != nullptr) {
          frame->Set(params[i].name, *given);
        } else {
          frame->Set(params[i].name, params[i].default_value ? Eval(*params[i].default_value, frame) : Value());
        }
      }
      std::string out;
      Exec(body, frame, &out);
      --call_depth_;
      return Value(std::move(out));
    });
  }

  // ---- expressions ----

  CallArgs EvalArgs(const Expr& e, size_t first, Frame* scope) {
    CallArgs args;
    for (size_t i = first; i < e.items.size(); ++i) args.positional.push_back(Eval(*e.items[i], scope));
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, Eval(*v, scope));
    return args;
  }

  Value CallValue(const Value& fn, const CallArgs& args, int line) {
    if (!fn.is_callable()) Fail(line, std::string("'") + fn.TypeName() + "' object is not callable");
    return fn.function()(args);
  }

  Value Eval(const Expr& e, Frame* scope) {
    Step();
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: {
        const Value* v = scope->Lookup(e.name);
        return v != nullptr ? *v : Value();
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        List items;
        for (const ExprPtr& x : e.items) items.push_back(Eval(*x, scope));
        return Value(std::move(items));
      }
      case Expr::Kind::kDict: {
        Dict d;
        for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
          const std::string key = Eval(*e.items[i], scope).Str();
          Value v = Eval(*e.items[i + 1], scope);
          bool replaced = false;
          for (auto& [k, old] : d) {
            if (k == key) {
              old = v;
              replaced = true;
            }
          }
          if (!replaced) d.emplace_back(key, std::move(v));
        }
        return Value(std::move(d));
      }
      case Expr::Kind::kGetAttr: {
        const Value obj = Eval(*e.items[0], scope);
        if (const Value* v = obj.Find(e.name)) return *v;
        if (HasMethod(obj, e.name)) {
          const std::string name = e.name;
          return Value::Callable(name, [obj, name](const CallArgs& a) { return *CallMethod(obj, name, a); });
        }
        return Value();
      }
      case Expr::Kind::kGetItem: return GetItem(Eval(*e.items[0], scope), Eval(*e.items[1], scope));
      case Expr::Kind::kSlice: {
        auto part = [&](size_t i) { return e.items[i] ? Eval(*e.items[i], scope) : Value(); };
        return Checked(Slice(Eval(*e.items[0], scope), part(1), part(2), part(3)));
      }
      case Expr::Kind::kCall: return EvalCall(e, scope);
      case Expr::Kind::kFilter: {
        Value operand;
        if (e.items[0]) {
          operand = Eval(*e.items[0], scope);
        } else {
          operand = std::move(block_operand_);
        }
        return Checked(ApplyFilter(e.name, operand, EvalArgs(e, 1, scope)));
      }
      case Expr::Kind::kTest: {
        const Value operand = Eval(*e.items[0], scope);
        const bool r = ApplyTest(e.name, operand, EvalArgs(e, 1, scope));
        return Value(r != e.negate);
      }
      case Expr::Kind::kUnary: {
        const Value v = Eval(*e.items[0], scope);
        if (e.name == "not") return Value(!v.Truthy());
        if (v.is_int() || v.is_bool()) {
          const int64_t i = v.is_int() ? v.as_int() : v.as_bool();
          if (e.name == "-" && i == INT64_MIN) Fail(e.line, "integer overflow");
          return Value(e.name == "-" ? -i : i);
        }
        if (v.is_float()) return Value(e.name == "-" ? -v.as_float() : v.as_float());
        Fail(e.line, "bad operand type for unary " + e.name + ": '" + v.TypeName() + "'");
      }
      case Expr::Kind::kBinary: {
        if (e.name == "and" || e.name == "or") {
          Value a = Eval(*e.items[0], scope);
          if (a.Truthy() == (e.name == "or")) return a;
          return Eval(*e.items[1], scope);
        }
        const Value a = Eval(*e.items[0], scope);
        const Value b = Eval(*e.items[1], scope);
        return Checked(BinaryOp(e.name, a, b));
      }
      case Expr::Kind::kTernary:
        if (Eval(*e.items[1], scope).Truthy()) return Eval(*e.items[0], scope);
        return e.items[2] ? Eval(*e.items[2], scope) : Value();
    }
    return Value();
  }

  Value EvalCall(const Expr& e, Frame* scope) {
    const Expr& callee = *e.items[0];
    if (callee.kind == Expr::Kind::kGetAttr) {
      // obj.method(...): a built-in method wins over a same-named dict key,
      // as Python's getattr does (message.get(...), tool.items()).
      const Value obj = Eval(*callee.items[0], scope);
      CallArgs args = EvalArgs(e, 1, scope);
      if (auto r = CallMethod(obj, callee.name, args)) return Checked(*r);
      const Value* fn = obj.Find(callee.name);
      if (fn == nullptr) {
        Fail(e.line, std::string("'") + obj.TypeName() + "' object has no attribute '" + callee.name + "'");
      }
      return Checked(CallValue(*fn, args, e.line));
    }
    const Value fn = Eval(callee, scope);
    if (fn.is_undefined() && callee.kind == Expr::Kind::kName) Fail(e.line, "'" + callee.name + "' is undefined");
    return Checked(CallValue(fn, EvalArgs(e, 1, scope), e.line));
  }

  const RenderOptions& opt_;
  std::vector<std::unique_ptr<Frame>> frames_;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
  Value block_operand_;  // the rendered body of a {% filter %} block
};

}  // namespace

std::string RenderProgram(const Program& program, const Dict& context, const RenderOptions& options) {
  return Interpreter(options).Run(program, context);
}

}  // namespace pagoda::jinja
