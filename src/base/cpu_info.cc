#include "base/cpu_info.h"

#include <fstream>
#include <set>
#include <sstream>

namespace pagoda {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

int ToInt(std::string_view s) {
  int v = 0;
  if (s.empty()) return -1;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

CpuInfo ParseCpuInfo(std::string_view text) {
  CpuInfo cpu;
  std::set<std::string_view> flags;
  bool have_flags = false;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key == "processor") {
      ++cpu.n_logical;
      continue;
    }
    if (cpu.n_logical > 1) continue;  // the first processor describes the CPU
    if (key == "vendor_id") cpu.vendor = value;
    else if (key == "model name") cpu.model_name = value;
    else if (key == "cpu family") cpu.family = ToInt(value);
    else if (key == "model") cpu.model = ToInt(value);
    else if (key == "stepping") cpu.stepping = ToInt(value);
    else if (key == "flags" && !have_flags) {
      have_flags = true;
      std::string_view rest = value;
      while (!rest.empty()) {
        const size_t sp = rest.find(' ');
        if (sp != 0) flags.insert(rest.substr(0, sp));
        rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
      }
    }
  }
  if (have_flags) {
    for (std::string_view f : kCpuIsaFlags) (flags.count(f) ? cpu.isa_present : cpu.isa_absent).emplace_back(f);
  }
  return cpu;
}

CpuInfo ReadCpuInfo() {
  std::ifstream in("/proc/cpuinfo");
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseCpuInfo(ss.str());
}

std::string CpuSummary(const CpuInfo& cpu) {
  std::string s = cpu.model_name.empty() ? "unknown CPU" : cpu.model_name;
  std::string ids;
  if (!cpu.vendor.empty()) ids = cpu.vendor;
  if (cpu.family >= 0) ids += (ids.empty() ? "" : " ") + std::string("family ") + std::to_string(cpu.family);
  if (cpu.model >= 0) ids += " model " + std::to_string(cpu.model);
  if (cpu.stepping >= 0) ids += " stepping " + std::to_string(cpu.stepping);
  if (!ids.empty()) s += " (" + ids + ")";
  if (cpu.n_logical > 0) s += ", " + std::to_string(cpu.n_logical) + " logical CPUs";
  return s;
}

}  // namespace pagoda
