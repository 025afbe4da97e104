#include "gateway/sse_splitter.h"

namespace pagoda::gateway {

bool SseSplitter::Feed(std::string_view bytes, const std::function<bool(const SseEvent&)>& on_event) {
  buf_.append(bytes);
  size_t start = 0;  // of the current event in buf_
  size_t line = 0;   // of the current line
  // The event's views point into buf_ (unchanged until the loop ends); a
  // copy is made only for a block with "\r\n" line ends or for data spread
  // over several data: lines.
  bool cr = false;      // a line of the current event ended in "\r\n"
  int data_lines = 0;   // data: fields in the current event
  std::string_view data;
  SseEvent ev;
  for (;;) {
    const size_t nl = buf_.find('\n', line);
    if (nl == std::string::npos) break;
    std::string_view l(buf_.data() + line, nl - line);
    if (!l.empty() && l.back() == '\r') {
      l.remove_suffix(1);
      cr = true;
    }
    const size_t line_start = line;
    line = nl + 1;
    if (l.empty()) {  // end of an event
      const size_t event_start = start;
      start = line;
      if (line_start == event_start) {  // no lines since the last blank one
        cr = false;
        continue;
      }
      const std::string_view raw(buf_.data() + event_start, line_start - event_start);
      ev.block = cr ? DropCarriageReturns(raw) : raw;
      ev.data = data_lines > 1 ? std::string_view(data_) : data;
      ev.has_data = data_lines > 0;
      const bool go_on = on_event(ev);
      cr = false;
      data_lines = 0;
      data = {};
      if (!go_on) {
        buf_.erase(0, start);
        return false;
      }
      continue;
    }
    if (l.substr(0, 4) == "data" && (l.size() == 4 || l[4] == ':')) {
      l.remove_prefix(l.size() == 4 ? 4 : 5);
      if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
      if (data_lines == 0) {
        data = l;
      } else {
        if (data_lines == 1) data_.assign(data);
        data_ += '\n';
        data_.append(l);
      }
      ++data_lines;
    }
  }
  buf_.erase(0, start);
  if (buf_.size() > max_event_bytes_) {
    overflowed_ = true;
    return false;
  }
  return true;
}

std::string_view SseSplitter::DropCarriageReturns(std::string_view raw) {
  block_.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r' && i + 1 < raw.size() && raw[i + 1] == '\n') continue;
    block_ += raw[i];
  }
  return block_;
}

}  // namespace pagoda::gateway
