#include "base/cpu_info.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>

namespace pagoda {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

constexpr const char* kTwoCpus =
    "processor\t: 0\n"
    "vendor_id\t: AuthenticAMD\n"
    "cpu family\t: 25\n"
    "model\t\t: 17\n"
    "model name\t: AMD EPYC\n"
    "stepping\t: 1\n"
    "flags\t\t: fpu sse2 avx fma f16c bmi2 avx2 avx512f avx512dq avx512bw avx512vl avx512_bf16 avx512_vnni\n"
    "\n"
    "processor\t: 1\n"
    "vendor_id\t: Other\n"
    "model name\t: Not the first\n"
    "flags\t\t: fpu\n";

TEST(CpuInfoTest, ParsesTheFirstProcessorAndCountsAll) {
  const CpuInfo c = ParseCpuInfo(kTwoCpus);
  EXPECT_EQ(c.vendor, "AuthenticAMD");
  EXPECT_EQ(c.model_name, "AMD EPYC");
  EXPECT_EQ(c.family, 25);
  EXPECT_EQ(c.model, 17);
  EXPECT_EQ(c.stepping, 1);
  EXPECT_EQ(c.n_logical, 2);
  for (const char* f :
       {"avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"}) {
    EXPECT_TRUE(Has(c.isa_present, f)) << f;
  }
  EXPECT_TRUE(Has(c.isa_absent, "avx_vnni"));
  EXPECT_FALSE(Has(c.isa_present, "avx_vnni"));
  EXPECT_EQ(c.isa_present.size() + c.isa_absent.size(), std::size(kCpuIsaFlags));
  EXPECT_EQ(CpuSummary(c), "AMD EPYC (AuthenticAMD family 25 model 17 stepping 1), 2 logical CPUs");
}

TEST(CpuInfoTest, MissingFieldsStayUnknown) {
  const CpuInfo c = ParseCpuInfo("garbage without colons\nmodel : x17\n");
  EXPECT_TRUE(c.model_name.empty());
  EXPECT_EQ(c.model, -1);
  EXPECT_EQ(c.family, -1);
  EXPECT_TRUE(c.isa_present.empty());
  EXPECT_TRUE(c.isa_absent.empty());
  EXPECT_EQ(CpuSummary(c), "unknown CPU");
}

TEST(CpuInfoTest, ReadsThisMachine) {
  if (!std::filesystem::exists("/proc/cpuinfo")) GTEST_SKIP() << "no /proc/cpuinfo";
  const CpuInfo c = ReadCpuInfo();
  EXPECT_GE(c.n_logical, 1);
  EXPECT_FALSE(CpuSummary(c).empty());
}

}  // namespace
}  // namespace pagoda
