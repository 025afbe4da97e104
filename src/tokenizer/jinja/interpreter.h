// Interpreter: renders a parsed Program against a context of variables.
// Scoping follows Jinja: a for loop's body has its own scope (a `set` inside
// it does not leak out; use a namespace), if-blocks do not, macros see the
// scope they were defined in plus their arguments.
//
// Runaway templates (endless recursion, huge loops or outputs) stop with an
// error once a limit is passed. Stateless between calls: one Program may be
// rendered by many threads at once.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <string>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace pagoda::jinja {

struct RenderLimits {
  uint64_t max_steps = 10'000'000;       // statements + expressions evaluated
  size_t max_output_bytes = 64u << 20;   // any string built, the output included
  int max_call_depth = 64;               // nested macro calls
};

struct RenderOptions {
  RenderLimits limits;
  // The local time strftime_now() formats; unset: the system clock.
  std::function<std::tm()> now;
};

// Throws JinjaError: raise_exception(), type errors, exceeded limits.
std::string RenderProgram(const Program& program, const Dict& context, const RenderOptions& options);

}  // namespace pagoda::jinja
