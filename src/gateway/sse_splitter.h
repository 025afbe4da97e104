// SseSplitter: cuts a text/event-stream body, fed in arbitrary pieces, into
// events, so the gateway relays each event as soon as its blank line
// arrives, framed as the upstream framed it: every line of the event (data:,
// event:, id:, retry:, unknown fields and ": comment" lines) in order. Lines
// may end in \n or \r\n; the block hands them on ending in \n. Not
// thread-safe (one stream).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace pagoda::gateway {

// Views valid during the callback only.
struct SseEvent {
  std::string_view block;  // the event's lines in order, each ending in '\n' (no blank line)
  std::string_view data;   // its data: fields' values joined with '\n'
  bool has_data = false;   // at least one data: field (an event a client's parser dispatches)
};

class SseSplitter {
 public:
  explicit SseSplitter(size_t max_event_bytes = 16u << 20) : max_event_bytes_(max_event_bytes) {}
  // Calls `on_event` for each complete event (blank lines between events
  // carry none); returns false when the callback asked to stop, or an event
  // exceeds the limit (garbage).
  bool Feed(std::string_view bytes, const std::function<bool(const SseEvent& event)>& on_event);
  bool overflowed() const { return overflowed_; }
  // Bytes of an unfinished event.
  size_t pending() const { return buf_.size(); }

 private:
  // `raw` with each "\r\n" turned into "\n" (in block_).
  std::string_view DropCarriageReturns(std::string_view raw);

  std::string buf_;
  // An event's block or joined data when they are not one piece of buf_;
  // kept between events for their capacity.
  std::string block_, data_;
  size_t max_event_bytes_;
  bool overflowed_ = false;
};

}  // namespace pagoda::gateway
