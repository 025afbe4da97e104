// SseSplitter: cuts a text/event-stream body, fed in arbitrary pieces, into
// events (the data: lines of each, joined with '\n'), so the gateway relays
// each event as soon as its blank line arrives. Lines may end in \n or \r\n;
// comments and other fields are dropped. Not thread-safe (one stream).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace pagoda::gateway {

class SseSplitter {
 public:
  explicit SseSplitter(size_t max_event_bytes = 16u << 20) : max_event_bytes_(max_event_bytes) {}
  // Calls `on_event(data)` for each complete event; returns false when the
  // callback asked to stop, or an event exceeds the limit (garbage).
  bool Feed(std::string_view bytes, const std::function<bool(std::string_view data)>& on_event);
  bool overflowed() const { return overflowed_; }
  // Bytes of an unfinished event.
  size_t pending() const { return buf_.size(); }

 private:
  std::string buf_;
  size_t max_event_bytes_;
  bool overflowed_ = false;
};

}  // namespace pagoda::gateway
