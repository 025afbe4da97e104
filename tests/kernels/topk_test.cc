#include "kernels/cpu/topk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace pagoda::kernels {
namespace {

TEST(TopKTest, BestFirstTiesToSmallerIdNaNNeverChosen) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {1.0f, nan, 3.0f, 3.0f, -2.0f, 0.5f};
  std::vector<float> v(4);
  std::vector<int32_t> id(4);
  TopK(x.data(), 1, 6, 4, v.data(), id.data());
  EXPECT_EQ(id, (std::vector<int32_t>{2, 3, 0, 5}));
  EXPECT_EQ(v, (std::vector<float>{3.0f, 3.0f, 1.0f, 0.5f}));
}

TEST(TopKTest, FillsSlotsBeyondTheRowWithMinusInfAndMinusOne) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {nan, -std::numeric_limits<float>::infinity(), 7.0f,  // row 0
                                4.0f, 5.0f, 6.0f};                                  // row 1
  std::vector<float> v(8);
  std::vector<int32_t> id(8);
  TopK(x.data(), 2, 3, 4, v.data(), id.data());
  EXPECT_EQ(id, (std::vector<int32_t>{2, 1, -1, -1, 2, 1, 0, -1}));
  EXPECT_EQ(v[0], 7.0f);
  EXPECT_TRUE(std::isinf(v[1]) && v[1] < 0);
  EXPECT_TRUE(std::isinf(v[2]) && v[2] < 0);
  EXPECT_EQ(v[4], 6.0f);
}

TEST(TopKTest, ArgmaxIsKOne) {
  const std::vector<float> x = {0.1f, 0.9f, 0.9f, 0.3f};
  float v = 0;
  int32_t id = 0;
  TopK(x.data(), 1, 4, 1, &v, &id);
  EXPECT_EQ(id, 1);
  EXPECT_EQ(v, 0.9f);
}

}  // namespace
}  // namespace pagoda::kernels
