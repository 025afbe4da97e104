// Reading one sample from a /metrics page (Prometheus text) in tests.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda::testing {

// The value of the first sample line "pagoda:<name>{...} <value>"; nullopt
// when the page has none.
inline std::optional<double> MetricValue(std::string_view page, std::string_view name) {
  const std::string key = "\npagoda:" + std::string(name) + "{";
  size_t at = page.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  at = page.find("} ", at);
  if (at == std::string_view::npos) return std::nullopt;
  return std::strtod(std::string(page.substr(at + 2, page.find('\n', at) - at - 2)).c_str(), nullptr);
}

}  // namespace pagoda::testing
