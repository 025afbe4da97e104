// Helpers shared by the subcommands: CLI11 parsing with our exit codes, and
// error reporting ("pagoda: <message>" on stderr, exit 1).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "base/status.h"

namespace pagoda::cli {

// Returns -1 when parsing succeeded, else the exit code to return (0 for --help).
inline int ParseArgs(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "pagoda %s: %s\n", app.get_name().c_str(), e.what());
    return 2;
  }
  return -1;
}

inline int Fail(const Status& s) {
  std::fprintf(stderr, "pagoda: error: %s\n", s.message().c_str());
  return 1;
}

inline int Fail(const std::string& msg) {
  std::fprintf(stderr, "pagoda: error: %s\n", msg.c_str());
  return 1;
}

}  // namespace pagoda::cli
