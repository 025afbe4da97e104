// StopMatcher: finds OpenAI `stop` strings in a choice's streamed text. Text
// is pushed as it is decoded; what comes back is safe to send: a suffix that
// could still grow into a stop string is held back until the next push
// proves it cannot (a stop string split across tokens is still caught).
// One per choice; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Appends `text`; returns the text now safe to emit. Once a stop string is
  // found, returns the text before it and stopped() turns true (later pushes
  // return "").
  std::string Push(std::string_view text);
  // The held-back text, at the end of generation (no stop string followed).
  std::string Flush();
  bool stopped() const { return stopped_; }

 private:
  // Length of the longest suffix of held_ that is a proper prefix of a stop string.
  size_t PartialSuffix() const;

  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace pagoda::server
