#include "server/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace pagoda::server {

std::string StopMatcher::Push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  // The earliest stop string wins (ties: the first listed).
  size_t cut = std::string::npos;
  for (const auto& s : stops_) {
    if (s.empty()) continue;
    size_t at = held_.find(s);
    if (at != std::string::npos) cut = std::min(cut, at);
  }
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  size_t keep = PartialSuffix();
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::Flush() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

size_t StopMatcher::PartialSuffix() const {
  size_t best = 0;
  for (const auto& s : stops_) {
    size_t max_len = std::min(held_.size(), s.empty() ? 0 : s.size() - 1);
    for (size_t len = max_len; len > best; --len) {
      if (std::string_view(held_).substr(held_.size() - len) == std::string_view(s).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace pagoda::server
