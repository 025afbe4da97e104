#include "base/prometheus_text.h"

#include <cstdio>

namespace pagoda {

std::string PromLabel(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string PromNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

void RenderHistogram(std::ostream& o, const std::string& name, const std::string& help, const BucketHistogram::Snapshot& s) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  uint64_t cum = 0;
  for (size_t b = 0; b < s.bounds.size(); ++b) {
    cum += s.counts[b];
    o << name << "_bucket{le=\"" << PromNumber(s.bounds[b]) << "\"} " << cum << "\n";
  }
  cum += s.counts.back();
  o << name << "_bucket{le=\"+Inf\"} " << cum << "\n"
    << name << "_sum " << PromNumber(s.sum) << "\n"
    << name << "_count " << s.count << "\n";
}

}  // namespace pagoda
