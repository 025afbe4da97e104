// The bounds `pagoda bench` prints beside its figures (speed_bench.h):
// linear-weight bytes and params from a checkpoint, and tg bytes per token.
#include "engine/speed_bench.h"

#include <gtest/gtest.h>

#include "model/random_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

std::unique_ptr<GgufFile> WriteAndOpen(const RandomModelSpec& spec, const std::string& name) {
  const std::string path = (testing::TempDirForProcess() / name).string();
  EXPECT_TRUE(WriteRandomModel(spec, path).ok());
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok());
  return f.ok() ? std::move(f).value() : nullptr;
}

RandomModelSpec SmallSpec() {
  RandomModelSpec spec;
  spec.n_embd = 64;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 128;
  spec.n_vocab = 320;
  spec.weight_type = DType::kQ8_0;
  spec.output_type = DType::kF32;
  return spec;
}

TEST(SpeedBenchTest, CountsLinearWeightsByTypeWithoutTheEmbedding) {
  auto f = WriteAndOpen(SmallSpec(), "untied.gguf");
  ASSERT_NE(f, nullptr);
  const LinearWeights lw = CountLinearWeights(*f);
  int64_t q8 = 0, f32 = 0, heads = 0, bytes = 0;
  for (const auto& g : lw.groups) {
    (g.type == DType::kQ8_0 ? q8 : f32) += g.n_tensors;
    heads += g.head ? g.n_tensors : 0;
    bytes += g.bytes;
  }
  EXPECT_EQ(q8, 2 * 7);  // q k v o gate up down per layer; token_embd is looked up
  EXPECT_EQ(f32, 1);     // output.weight
  EXPECT_EQ(heads, 1);
  EXPECT_DOUBLE_EQ(lw.decode_bytes, static_cast<double>(bytes));
  // [64 -> 64 (q), 32 (k), 32 (v), 64 (o)] + 3 x 64 x 128 per layer; the head is left out.
  EXPECT_DOUBLE_EQ(lw.prefill_params, 2.0 * (64 * (64 + 32 + 32 + 64) + 3 * 64 * 128));
  EXPECT_FALSE(lw.decode_type.has_value());
}

TEST(SpeedBenchTest, TiedEmbeddingCountsAsTheHead) {
  RandomModelSpec spec = SmallSpec();
  spec.tied_output = true;
  spec.output_type.reset();
  auto f = WriteAndOpen(spec, "tied.gguf");
  ASSERT_NE(f, nullptr);
  const LinearWeights lw = CountLinearWeights(*f);
  int64_t n = 0, heads = 0;
  for (const auto& g : lw.groups) {
    n += g.n_tensors;
    heads += g.head ? g.n_tensors : 0;
  }
  EXPECT_EQ(n, 2 * 7 + 1);
  EXPECT_EQ(heads, 1);  // token_embd
  EXPECT_DOUBLE_EQ(lw.prefill_params, 2.0 * (64 * (64 + 32 + 32 + 64) + 3 * 64 * 128));
}

TEST(SpeedBenchTest, TgBytesPerTokenAddsWeightsAndCachedPositions) {
  KvCacheSpec kv;
  kv.layers.assign(2, KvLayerSpec{2, 16, 16});  // 2 x (32 + 32) elements per position
  SpeedBenchOptions opt;
  opt.n_gen = 3;  // positions read per step: 1, 2, 3 -> mean 2
  opt.n_depth = 0;
  EXPECT_DOUBLE_EQ(TgBytesPerToken(1000, kv, KvType::kF16, opt), 1000 + 2 * 128 * 2.0);
  opt.n_depth = 10;  // mean 12
  EXPECT_DOUBLE_EQ(TgBytesPerToken(1000, kv, KvType::kF32, opt), 1000 + 2 * 256 * 12.0);
  opt.n_parallel = 4;  // weights shared by the step's 4 tokens
  EXPECT_DOUBLE_EQ(TgBytesPerToken(1000, kv, KvType::kF32, opt), 250 + 2 * 256 * 12.0);
  // int8: 1 byte per element plus one scale byte per (position, head) of K and of V.
  opt.n_parallel = 1;
  EXPECT_DOUBLE_EQ(TgBytesPerToken(0, kv, KvType::kInt8, opt), 2 * (64 + 4) * 12.0);
}

}  // namespace
}  // namespace pagoda
