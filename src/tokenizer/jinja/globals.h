// The global functions a template may call: range, namespace, dict,
// raise_exception, strftime_now.
#pragma once

#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/value.h"

namespace pagoda::jinja {

Dict GlobalFunctions(const RenderOptions& options);

}  // namespace pagoda::jinja
