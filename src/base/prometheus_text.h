// The Prometheus text exposition format's small pieces, shared by the
// gateway's and the control plane's metric renderers. Pure functions; any thread.
#pragma once

#include <ostream>
#include <string>

#include "base/histogram.h"

namespace pagoda {

// A label value: backslash, quote and newline escaped.
std::string PromLabel(const std::string& s);
// A sample value ("%.9g").
std::string PromNumber(double v);
// `s` under `name` with its HELP and TYPE lines.
void RenderHistogram(std::ostream& o, const std::string& name, const std::string& help, const BucketHistogram::Snapshot& s);

}  // namespace pagoda
