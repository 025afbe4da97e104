// Paths to shared test data; tests that need it skip with a message when absent.
#pragma once

#include <filesystem>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

namespace pagoda::testing {

inline std::string TestDataPath(const std::string& rel) { return std::string(PAGODA_TESTDATA_DIR) + "/" + rel; }

inline bool HaveTestData(const std::string& rel) { return std::filesystem::exists(TestDataPath(rel)); }

// A temporary directory private to this test process. ctest runs each test
// case as its own process, several at once, so fixed file names directly under
// /tmp would be written by one case while another reads them.
inline std::filesystem::path TempDirForProcess() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("pagoda_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace pagoda::testing

// Skips the current test when ../shared/testdata/<rel> is absent (a user's fresh clone).
#define PAGODA_REQUIRE_TESTDATA(rel)                                                              \
  do {                                                                                            \
    if (!::pagoda::testing::HaveTestData(rel))                                                    \
      GTEST_SKIP() << "test data " << ::pagoda::testing::TestDataPath(rel)                        \
                   << " is absent (it lives in ../shared/testdata beside the repository)";        \
  } while (0)
