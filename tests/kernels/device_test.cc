#include "kernels/device.h"

#include <gtest/gtest.h>

namespace pagoda::kernels {
namespace {

TEST(DeviceSpecTest, ParsesCpuCudaAndCudaOrdinal) {
  auto cpu = ParseDeviceSpec("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->kind, DeviceKind::kCpu);
  auto cuda = ParseDeviceSpec("cuda");
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda->kind, DeviceKind::kCuda);
  EXPECT_EQ(cuda->ordinal, 0);
  auto three = ParseDeviceSpec("cuda:3");
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->ordinal, 3);
  EXPECT_EQ(DeviceSpecName(*three), "cuda:3");
  EXPECT_EQ(DeviceSpecName(*cpu), "cpu");
}

TEST(DeviceSpecTest, RejectsEverythingElse) {
  for (const char* bad : {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "cuda:1024", "cpu:0", "cuda 0"}) {
    auto r = ParseDeviceSpec(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("expected cpu, cuda or cuda:N"), std::string::npos);
  }
}

}  // namespace
}  // namespace pagoda::kernels
