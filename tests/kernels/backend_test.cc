// Backend's checked entries (validate before dispatch: an InvalidArgument and
// nothing enqueued) and MakeBackend's answers for a CUDA device it cannot
// open. The ops themselves: backend_ops_test.cc, backend_attention_test.cc.
#include "kernels/backend.h"

#include <gtest/gtest.h>

#include <string>

#include "base/thread_pool.h"
#include "kernels/backend_test_support.h"

namespace pagoda::kernels {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Whatever this machine has, a CUDA device past any real count is refused
// with one of the documented messages, never a crash.
TEST(MakeBackendTest, SaysWhyACudaDeviceCannotBeOpened) {
  ThreadPool pool(1);
  auto b = MakeBackend(DeviceSpec{DeviceKind::kCuda, 1023}, pool);
  ASSERT_FALSE(b.ok());
  const std::string& m = b.status().message();
  EXPECT_TRUE(StartsWith(m, "this build has no CUDA support") || StartsWith(m, "no CUDA device: ") ||
              StartsWith(m, "CUDA device 1023 not present: "))
      << m;
}

TEST(MakeBackendTest, CpuAlwaysOpens) {
  ThreadPool pool(1);
  auto b = MakeBackend(DeviceSpec{}, pool);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->kind(), DeviceKind::kCpu);
  EXPECT_EQ((*b)->name(), "cpu (1 threads)");
}

class BackendValidationTest : public BackendTestBase<const char*> {};

TEST_P(BackendValidationTest, RejectsBadShapesBeforeDispatch) {
  DeviceBuffer buf = PoisonedFloats(1024);
  float* f = buf.as<float>();
  const DeviceMatrix q4{DType::kQ4_0, 48, 4, buf.data()};  // 48: not a multiple of 32
  EXPECT_EQ(backend().MatMul(stream(), q4, f, 1, f).code(), StatusCode::kInvalidArgument);
  const DeviceMatrix f32{DType::kF32, 8, 4, buf.data()};
  EXPECT_EQ(backend().MatMul(stream(), f32, f, 0, f).code(), StatusCode::kInvalidArgument);
  const DeviceMatrix q8_1{DType::kQ8_1, 32, 4, buf.data()};  // no backend multiplies Q8_1 weights
  EXPECT_EQ(backend().MatMul(stream(), q8_1, f, 1, f).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(backend().Rope(stream(), f, 1, 8, 1, 8, 3, false, f, f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend().Rope(stream(), f, 1, 4, 1, 8, 8, false, f, f).code(), StatusCode::kInvalidArgument);
  int32_t* ids = reinterpret_cast<int32_t*>(f);
  EXPECT_EQ(backend().TopK(stream(), f, 1, 10, 0, f, ids).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend().TopK(stream(), f, 1, 10, kMaxTopK + 1, f, ids).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(backend().Softmax(stream(), f, 1, 0).code(), StatusCode::kInvalidArgument);

  KvPoolView pool;
  pool.type = KvType::kFp8E4M3;  // scaled, but no scale arrays
  pool.n_blocks = 1;
  pool.block_size = 16;
  pool.n_head_kv = 1;
  pool.head_dim_k = pool.head_dim_v = 8;
  pool.k = pool.v = buf.data();
  PagedBatch batch{1, ids, ids, ids, 1, 1};
  EXPECT_EQ(backend().StoreKv(stream(), pool, batch, f, 8, f, 8).code(), StatusCode::kInvalidArgument);
  pool.type = KvType::kF16;
  pool.head_dim_k = kMaxDeviceHeadDim + 1;
  EXPECT_EQ(backend().StoreKv(stream(), pool, batch, f, 8, f, 8).code(), StatusCode::kInvalidArgument);
  pool.head_dim_k = 8;
  const AttentionShape wrong{4, 2, 8, 8, 1.0f};  // the pool has one KV head
  EXPECT_EQ(backend().PagedAttention(stream(), wrong, pool, batch, f, 32, f, 32).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(stream().Synchronize().ok());
}

INSTANTIATE_TEST_SUITE_P(All, BackendValidationTest, ::testing::ValuesIn(kBackendNames), BackendParamName);

}  // namespace
}  // namespace pagoda::kernels
