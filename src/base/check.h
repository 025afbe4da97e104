// PAGODA_CHECK: invariants that must hold; failing one aborts loudly with the
// file, line and message. Never use it for input validation (use Status).
#pragma once

#include <sstream>

namespace pagoda::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return os_; }

 private:
  std::ostringstream os_;
};

}  // namespace pagoda::internal

#define PAGODA_CHECK(cond) \
  if (cond) {              \
  } else                   \
    ::pagoda::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()
