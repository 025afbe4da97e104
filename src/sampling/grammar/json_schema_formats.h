// GBNF for the JSON Schema string formats the converter enforces: date, time,
// date-time, uuid, email (what ajv-formats' "full" mode accepts, or a subset of
// it). Internal to the JSON Schema converter; pure functions, any thread.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pagoda::grammar {

// Rules (full name, body) for `format`, the first being the string content
// (without quotes); all names start with `prefix` + "-". nullopt for a format
// that is not supported.
std::optional<std::vector<std::pair<std::string, std::string>>> FormatRules(
    const std::string& format, const std::string& prefix);

// The supported formats, for error messages and docs.
const char* SupportedFormats();

}  // namespace pagoda::grammar
