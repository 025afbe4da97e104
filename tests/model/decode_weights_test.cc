// --decode-weights: the decode copies, the routing of a mixed batch's token
// groups through their phase's weights, and the start-up errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "kernels/cpu/quantize_weights.h"
#include "model/decode_weight_store.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/random_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

std::string TempPath(const std::string& name) {
  return (::pagoda::testing::TempDirForProcess() / ("pagoda_dw_" + name)).string();
}

RandomModelSpec Spec(DType type) {
  RandomModelSpec spec;
  spec.n_embd = 256;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 512;
  spec.n_vocab = 320;
  spec.weight_type = type;
  spec.seed = 17;
  return spec;
}

bool IsLinear(const GgufTensorInfo& t) {
  return t.n_dims == 2 && t.name != "token_embd.weight";
}

// The same model with every linear weight requantized to `type` by
// RequantizeTensor: what the decode copies must equal.
std::string WriteRequantized(const std::string& in_path, DType type, const std::string& name) {
  auto in = GgufFile::Open(in_path);
  EXPECT_TRUE(in.ok());
  GgufWriter w;
  for (const auto& [k, v] : (*in)->metadata().entries()) w.metadata().Set(k, v);
  ThreadPool pool(2);
  for (const GgufTensorInfo& t : (*in)->tensors()) {
    const TensorView src = (*in)->View(t);
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    if (IsLinear(t)) {
      std::vector<uint8_t> bytes(src.rows() * RowBytes(type, t.ne[0]));
      EXPECT_TRUE(kernels::RequantizeTensor(src, type, bytes.data(), pool).ok());
      EXPECT_TRUE(w.AddTensor(t.name, type, ne, std::move(bytes)).ok());
    } else {
      EXPECT_TRUE(w.AddTensor(t.name, t.type, ne, src.data, t.nbytes).ok());
    }
  }
  const std::string path = TempPath(name);
  EXPECT_TRUE(w.Write(path).ok());
  return path;
}

TEST(DecodeWeightsTest, ReportsTheCopiesAndTheirMemory) {
  const std::string path = TempPath("info_q8.gguf");
  ASSERT_TRUE(WriteRandomModel(Spec(DType::kQ8_0), path).ok());
  ThreadPool pool(2);
  ModelOptions o;
  auto plain = LoadModel(path, pool, o);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->decode_weights_info().type.has_value());
  o.decode_weights = DType::kQ4_0;
  auto m = LoadModel(path, pool, o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const DecodeWeightsInfo info = (*m)->decode_weights_info();
  ASSERT_TRUE(info.type.has_value());
  EXPECT_EQ(*info.type, DType::kQ4_0);
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok());
  int64_t n = 0, bytes = 0, source = 0;
  for (const GgufTensorInfo& t : (*file)->tensors()) {
    if (!IsLinear(t)) continue;
    ++n;
    bytes += t.ne[1] * RowBytes(DType::kQ4_0, t.ne[0]);
    source += t.nbytes;
  }
  EXPECT_EQ(info.n_tensors, n);  // 7 per layer + the LM head
  EXPECT_EQ(n, 2 * 7 + 1);
  EXPECT_EQ(info.bytes, bytes);
  EXPECT_EQ(info.source_bytes, source);
  EXPECT_EQ(info.n_kept, 0);
  std::filesystem::remove(path);
}

TEST(DecodeWeightsTest, RefusesCheckpointsThatCannotSupplyThem) {
  for (DType t : {DType::kQ4_0, DType::kQ4_K, DType::kQ5_0, DType::kQ6_K}) {
    const std::string path = TempPath(std::string("refuse_") + DTypeName(t) + ".gguf");
    ASSERT_TRUE(WriteRandomModel(Spec(t), path).ok());
    ThreadPool pool(1);
    ModelOptions o;
    o.decode_weights = DType::kQ4_0;
    auto m = LoadModel(path, pool, o);
    ASSERT_FALSE(m.ok()) << DTypeName(t);
    EXPECT_NE(m.status().message().find("--decode-weights"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find(DTypeName(t)), std::string::npos) << m.status().message();
    std::filesystem::remove(path);
  }
  EXPECT_FALSE(ParseDecodeWeightType("q8_0").ok());
  EXPECT_FALSE(ParseDecodeWeightType("q4").ok());
  EXPECT_EQ(*ParseDecodeWeightType("q4_k"), DType::kQ4_K);
}

void ExpectRowsNear(const float* got, const float* want, int64_t n, const char* what) {
  double max_diff = 0, max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    max_diff = std::max(max_diff, double(std::fabs(got[i] - want[i])));
    max_abs = std::max(max_abs, double(std::fabs(want[i])));
  }
  EXPECT_LE(max_diff, 1e-5 * max_abs + 1e-6) << what;
}

double MaxDiff(const float* a, const float* b, int64_t n) {
  double d = 0;
  for (int64_t i = 0; i < n; ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

struct RoutingCase {
  DType checkpoint;
  DType decode;
};

class DecodeWeightsRouting : public ::testing::TestWithParam<RoutingCase> {};

// A mixed batch (sequence 0's decode token, then sequence 1's prompt chunk):
// the decode token must come out as if run through the requantized weights,
// the prompt chunk as if run through the checkpoint's, both over the same
// cache contents (sequence 0's prompt was prefilled with the checkpoint's).
TEST_P(DecodeWeightsRouting, MixedBatchSendsEachGroupThroughItsPhaseWeights) {
  const RoutingCase c = GetParam();
  const std::string base = TempPath(std::string("route_") + DTypeName(c.checkpoint) + ".gguf");
  ASSERT_TRUE(WriteRandomModel(Spec(c.checkpoint), base).ok());
  const std::string low = WriteRequantized(base, c.decode, std::string("route_low_") + DTypeName(c.decode) + ".gguf");
  ThreadPool pool(2);
  ModelOptions o;
  auto plain = LoadModel(base, pool, o);
  auto lowm = LoadModel(low, pool, o);
  o.decode_weights = c.decode;
  auto dw = LoadModel(base, pool, o);
  ASSERT_TRUE(plain.ok() && lowm.ok() && dw.ok());
  const int64_t V = (*plain)->n_vocab();

  const std::vector<int32_t> prompt0 = {1, 17, 42, 99, 7, 230};
  const std::vector<int32_t> prompt1 = {1, 5, 6, 300, 12};
  const int32_t next0 = 77;
  auto make_kv = [&] {
    auto kv = ContiguousKvCache::Create((*plain)->kv_cache_spec(), 2, 64, KvType::kF32);
    EXPECT_TRUE(kv.ok());
    return std::move(kv).value();
  };
  Batch pre;
  for (size_t i = 0; i < prompt0.size(); ++i) pre.Add(prompt0[i], int32_t(i), 0, i + 1 == prompt0.size());
  std::vector<float> scratch(V);

  // Reference: checkpoint prefill, then the decode token through the
  // requantized model and the chunk through the checkpoint, separately.
  auto kv_ref = make_kv();
  ASSERT_TRUE((*plain)->Forward(pre, *kv_ref, scratch).ok());
  Batch d;
  d.Add(next0, int32_t(prompt0.size()), 0, true, /*is_decode=*/true);
  std::vector<float> want_decode(V), want_prefill(V), plain_decode(V);
  ASSERT_TRUE((*lowm)->Forward(d, *kv_ref, want_decode).ok());
  Batch p;
  for (size_t i = 0; i < prompt1.size(); ++i) p.Add(prompt1[i], int32_t(i), 1, i + 1 == prompt1.size());
  ASSERT_TRUE((*plain)->Forward(p, *kv_ref, want_prefill).ok());
  {
    auto kv = make_kv();
    ASSERT_TRUE((*plain)->Forward(pre, *kv, scratch).ok());
    ASSERT_TRUE((*plain)->Forward(d, *kv, plain_decode).ok());
  }

  // The decode-weight model, one mixed batch.
  auto kv = make_kv();
  ASSERT_TRUE((*dw)->Forward(pre, *kv, scratch).ok());
  Batch mixed;
  mixed.Add(next0, int32_t(prompt0.size()), 0, true, /*is_decode=*/true);
  for (size_t i = 0; i < prompt1.size(); ++i) mixed.Add(prompt1[i], int32_t(i), 1, i + 1 == prompt1.size());
  std::vector<float> got(2 * V);
  ASSERT_TRUE((*dw)->Forward(mixed, *kv, got).ok());
  ExpectRowsNear(got.data(), want_decode.data(), V, "decode token");
  ExpectRowsNear(got.data() + V, want_prefill.data(), V, "prompt chunk");
  // And the decode copy is really in use: 4-bit logits differ visibly.
  EXPECT_GT(MaxDiff(got.data(), plain_decode.data(), V), 1e-3);

  // The prefill of the decode-weight model is the checkpoint's, bit for bit.
  std::vector<float> a(V), b(V);
  auto kva = make_kv(), kvb = make_kv();
  ASSERT_TRUE((*dw)->Forward(p, *kva, a).ok());
  ASSERT_TRUE((*plain)->Forward(p, *kvb, b).ok());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), V * sizeof(float)));
  std::filesystem::remove(base);
  std::filesystem::remove(low);
}

INSTANTIATE_TEST_SUITE_P(Types, DecodeWeightsRouting,
                         ::testing::Values(RoutingCase{DType::kQ8_0, DType::kQ4_0},
                                           RoutingCase{DType::kQ8_0, DType::kQ4_K},
                                           RoutingCase{DType::kF16, DType::kQ4_0},
                                           RoutingCase{DType::kBF16, DType::kQ4_K},
                                           RoutingCase{DType::kF32, DType::kQ4_0}),
                         [](const auto& info) {
                           return std::string(DTypeName(info.param.checkpoint)) + "_" +
                                  DTypeName(info.param.decode);
                         });

// Interleaved phases (decode, prefill, decode, ...) give several runs per
// micro-batch; each row still matches the single-phase reference.
TEST(DecodeWeightsTest, InterleavedPhasesMatchSeparateSteps) {
  const std::string base = TempPath("interleave.gguf");
  ASSERT_TRUE(WriteRandomModel(Spec(DType::kQ8_0), base).ok());
  ThreadPool pool(2);
  ModelOptions o;
  o.decode_weights = DType::kQ4_0;
  auto dw = LoadModel(base, pool, o);
  ASSERT_TRUE(dw.ok());
  const int64_t V = (*dw)->n_vocab();
  auto make_kv = [&] {
    auto kv = ContiguousKvCache::Create((*dw)->kv_cache_spec(), 4, 32, KvType::kF32);
    EXPECT_TRUE(kv.ok());
    return std::move(kv).value();
  };
  // Sequences 0..3 each get a 3-token prompt; then one step mixes decode
  // tokens of 0 and 2 with single-token prompt chunks of 1 and 3.
  auto prefill_all = [&](KvCache& kv) {
    Batch b;
    for (int s = 0; s < 4; ++s) {
      for (int i = 0; i < 3; ++i) b.Add(10 * s + i + 2, i, s, false);
    }
    std::vector<float> none;
    ASSERT_TRUE((*dw)->Forward(b, kv, none).ok());
  };
  auto kv = make_kv();
  prefill_all(*kv);
  Batch mixed;
  for (int s = 0; s < 4; ++s) mixed.Add(100 + s, 3, s, true, /*is_decode=*/s % 2 == 0);
  std::vector<float> got(4 * V);
  ASSERT_TRUE((*dw)->Forward(mixed, *kv, got).ok());
  for (int s = 0; s < 4; ++s) {
    auto kv1 = make_kv();
    prefill_all(*kv1);
    Batch one;
    one.Add(100 + s, 3, s, true, s % 2 == 0);
    std::vector<float> want(V);
    ASSERT_TRUE((*dw)->Forward(one, *kv1, want).ok());
    ExpectRowsNear(got.data() + s * V, want.data(), V, s % 2 == 0 ? "decode" : "prefill");
  }
  std::filesystem::remove(base);
}

TEST(DecodeWeightsTest, BatchWithMismatchedDecodeFlagsIsRejected) {
  const std::string base = TempPath("flags.gguf");
  ASSERT_TRUE(WriteRandomModel(Spec(DType::kQ8_0), base).ok());
  ThreadPool pool(1);
  auto m = LoadModel(base, pool);
  ASSERT_TRUE(m.ok());
  auto kv = ContiguousKvCache::Create((*m)->kv_cache_spec(), 1, 16, KvType::kF16);
  Batch b;
  b.Add(1, 0, 0, true);
  b.decode.push_back(1);  // two flags for one token
  std::vector<float> logits((*m)->n_vocab());
  EXPECT_FALSE((*m)->Forward(b, **kv, logits).ok());
  b.decode.clear();  // empty: all prefill, accepted
  EXPECT_TRUE((*m)->Forward(b, **kv, logits).ok());
  std::filesystem::remove(base);
}

}  // namespace
}  // namespace pagoda
