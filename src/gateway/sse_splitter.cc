#include "gateway/sse_splitter.h"

namespace pagoda::gateway {

bool SseSplitter::Feed(std::string_view bytes, const std::function<bool(const SseEvent&)>& on_event) {
  buf_.append(bytes);
  size_t start = 0;  // of the current event in buf_
  size_t line = 0;   // of the current line
  std::string block, data;
  SseEvent ev;
  for (;;) {
    const size_t nl = buf_.find('\n', line);
    if (nl == std::string::npos) break;
    std::string_view l(buf_.data() + line, nl - line);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    line = nl + 1;
    if (l.empty()) {  // end of an event
      start = line;
      if (block.empty()) continue;
      ev.block = block;
      ev.data = data;
      const bool go_on = on_event(ev);
      block.clear();
      data.clear();
      ev.has_data = false;
      if (!go_on) {
        buf_.erase(0, start);
        return false;
      }
      continue;
    }
    block.append(l);
    block += '\n';
    if (l.substr(0, 4) == "data" && (l.size() == 4 || l[4] == ':')) {
      l.remove_prefix(l.size() == 4 ? 4 : 5);
      if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
      if (ev.has_data) data += '\n';
      data.append(l);
      ev.has_data = true;
    }
  }
  buf_.erase(0, start);
  if (buf_.size() > max_event_bytes_) {
    overflowed_ = true;
    return false;
  }
  return true;
}

}  // namespace pagoda::gateway
