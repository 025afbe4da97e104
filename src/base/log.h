// Minimal leveled logging to stderr. stdout belongs to program output.
// Never log prompts, generated text or secrets.
#pragma once

#include <sstream>

namespace pagoda {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

namespace internal {
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return os_; }

 private:
  LogLevel level_;
  std::ostringstream os_;
};
}  // namespace internal

}  // namespace pagoda

#define PAGODA_LOG(level)                                                        \
  if (::pagoda::LogLevel::k##level < ::pagoda::GetLogLevel()) {                  \
  } else                                                                         \
    ::pagoda::internal::LogMessage(::pagoda::LogLevel::k##level, __FILE__, __LINE__).stream()
