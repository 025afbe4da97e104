// The tojson filter: Python's json.dumps as transformers calls it
// (ensure_ascii=False unless asked, ", " and ": " separators, or "," and ": "
// with an indent), keys in insertion order unless sort_keys.
#pragma once

#include <optional>
#include <string>

#include "tokenizer/jinja/value.h"

namespace pagoda::jinja {

struct JsonDumpOptions {
  std::optional<int> indent;
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::pair<std::string, std::string>> separators;  // item, key
};

// Throws JinjaError for values JSON cannot hold (callables).
std::string JsonDump(const Value& v, const JsonDumpOptions& options);

}  // namespace pagoda::jinja
