// Checks a batch input file line by line (OpenAI's format: one JSON object
// per line, {"custom_id", "method": "POST", "url", "body"}). A bad line
// fails only itself: it becomes an error line with a code and a message; the
// rest run. A line whose custom_id repeats an earlier line's is refused the
// same way (duplicate_custom_id), so every custom_id in the output is unique.
// Bodies are checked with the same parsers the endpoints use, so a body that
// would be a 400 fails here, before anything runs. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/generation_options.h"

namespace pagoda::batch {

// Endpoints a batch may name.
bool IsBatchEndpoint(std::string_view endpoint);

struct CheckedLine {
  int64_t line_no = 0;  // 1-based; blank lines are skipped and not counted
  int64_t offset = 0;   // the line's bytes (without the '\n')
  int64_t length = 0;
  std::string custom_id;  // "" when the line has none that can be read
  bool valid = false;
  std::string error_code;     // invalid: "invalid_json", "missing_custom_id", ...
  std::string error_message;  // names the field; never echoes the body
};

// `endpoint`: the batch's; every line's url must equal it.
std::vector<CheckedLine> CheckInputLines(std::string_view content, std::string_view endpoint,
                                         const api::RequestLimits& limits = {});

// The body of line `line` of `content` (the request object's "body"), as
// JSON text; empty when the line no longer parses (the file changed).
std::string LineBody(std::string_view content, const CheckedLine& line);

}  // namespace pagoda::batch
