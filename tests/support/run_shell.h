// Helpers for tests that run a command (the node references) and read files
// it wrote.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace pagoda::testing {

inline std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command; returns its exit status and output (stdout + stderr).
inline int RunShell(const std::string& cmd, std::string* output) {
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) output->append(buf, n);
  return pclose(f);
}

}  // namespace pagoda::testing
