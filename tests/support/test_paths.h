// Paths to shared test data; tests that need it skip with a message when absent.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace pagoda::testing {

inline std::string TestDataPath(const std::string& rel) { return std::string(PAGODA_TESTDATA_DIR) + "/" + rel; }

inline bool HaveTestData(const std::string& rel) { return std::filesystem::exists(TestDataPath(rel)); }

}  // namespace pagoda::testing

// Skips the current test when ../shared/testdata/<rel> is absent (a user's fresh clone).
#define PAGODA_REQUIRE_TESTDATA(rel)                                                              \
  do {                                                                                            \
    if (!::pagoda::testing::HaveTestData(rel))                                                    \
      GTEST_SKIP() << "test data " << ::pagoda::testing::TestDataPath(rel)                        \
                   << " is absent (it lives in ../shared/testdata beside the repository)";        \
  } while (0)
