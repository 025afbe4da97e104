#include "base/log.h"

#include <atomic>
#include <cstdio>
#include <cstring>

namespace pagoda {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
}

void SetLogLevel(LogLevel level) { g_level.store(level); }
LogLevel GetLogLevel() { return g_level.load(); }

namespace internal {

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  static const char* kNames[] = {"D", "I", "W", "E", "-"};
  const char* base = std::strrchr(file, '/');
  os_ << kNames[static_cast<int>(level)] << " " << (base ? base + 1 : file) << ":" << line << "] ";
}

LogMessage::~LogMessage() {
  os_ << "\n";
  std::string s = os_.str();
  std::fwrite(s.data(), 1, s.size(), stderr);
}

}  // namespace internal
}  // namespace pagoda
