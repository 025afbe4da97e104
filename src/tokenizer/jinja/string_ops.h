// Python str operations on UTF-8 text, for the filters and methods: case
// mapping by code point (utf8proc), strip with a character set, split,
// replace.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja {

std::string ToUpper(std::string_view s);
std::string ToLower(std::string_view s);
// Jinja's title filter: each word (after whitespace, - ( { [ <) capitalized.
std::string ToTitle(std::string_view s);
// First character upper case, the rest lower case.
std::string Capitalize(std::string_view s);
// str.strip(chars): chars nullopt strips whitespace.
std::string Strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit): sep nullopt splits on whitespace runs.
std::vector<std::string> Split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.replace(old, new, count); count < 0 replaces all.
std::string Replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);

}  // namespace pagoda::jinja
