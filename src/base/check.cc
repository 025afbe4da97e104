#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace pagoda::internal {

CheckFailure::CheckFailure(const char* file, int line, const char* cond) {
  os_ << file << ":" << line << ": check failed: " << cond << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", os_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace pagoda::internal
