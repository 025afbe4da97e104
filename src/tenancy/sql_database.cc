#include "tenancy/sql_database.h"

#include <cstdio>
#include <cstdlib>

namespace pagoda::tenancy {

int64_t SqlInt(const SqlValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return static_cast<int64_t>(*d);
  if (const auto* s = std::get_if<std::string>(&v)) {
    // PostgreSQL sends SUM(bigint) as numeric text, possibly "123.0".
    char* end = nullptr;
    const long long x = std::strtoll(s->c_str(), &end, 10);
    if (end && *end == '.') return static_cast<int64_t>(std::strtod(s->c_str(), nullptr));
    return x;
  }
  return 0;
}

double SqlReal(const SqlValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return std::strtod(s->c_str(), nullptr);
  return 0;
}

std::string SqlText(const SqlValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", *d);
    return buf;
  }
  return "";
}

}  // namespace pagoda::tenancy
