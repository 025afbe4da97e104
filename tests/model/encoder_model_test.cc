// The bert encoder (encoder_model.h, arch/bert.cc) on small random models
// written by WriteRandomModel: hidden rows, pooled vectors and the classifier
// head against the float64 reference (reference_forward_bert.h) for F32, F16
// and Q8_0 weights; batch invariance; the batches it must refuse.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/matmul.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/reference_forward_bert.h"
#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

constexpr int kEmbd = 64;

RandomModelSpec BertSpec(DType type, int pooling, int n_cls_out) {
  RandomModelSpec s;
  s.arch = "bert";
  s.n_embd = kEmbd;
  s.n_layer = 2;
  s.n_head = 4;
  s.n_head_kv = 4;
  s.n_ff = 128;
  s.n_vocab = 300;
  s.n_ctx = 48;
  s.rms_eps = 1e-12f;
  s.weight_type = type;
  s.pooling_type = pooling;
  s.n_cls_out = n_cls_out;
  s.seed = 11;
  return s;
}

std::string WriteModel(const RandomModelSpec& spec, const std::string& tag) {
  const std::string path =
      (testing::TempDirForProcess() / ("bert_" + tag + "_" + DTypeName(spec.weight_type) + ".gguf")).string();
  const Status st = WriteRandomModel(spec, path);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return path;
}

std::vector<int32_t> Tokens(int n, int seed) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = 5 + (seed * 131 + i * 37 + i * i * 7) % 290;
  return t;
}

struct Loaded {
  std::shared_ptr<const GgufFile> file;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Model> model;
  std::unique_ptr<ContiguousKvCache> kv;
};

Loaded Load(const std::string& path, int max_batch_tokens = 512) {
  Loaded l;
  l.file = std::shared_ptr<const GgufFile>(GgufFile::Open(path).value());
  l.pool = std::make_unique<ThreadPool>(2);
  ModelOptions opt;
  opt.max_batch_tokens = max_batch_tokens;
  auto m = LoadModel(l.file, *l.pool, opt);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return l;
  l.model = std::move(*m);
  l.kv = ContiguousKvCache::Create(l.model->kv_cache_spec(), 64, 64).value();
  return l;
}

// Runs the sequences in one batch, their tokens interleaved round-robin;
// returns each sequence's hidden rows [n][n_embd].
std::vector<std::vector<float>> RunInterleaved(Loaded& l, const std::vector<std::vector<int32_t>>& seqs,
                                               int first_seq_id = 0) {
  Batch b;
  std::vector<std::vector<int64_t>> row_of(seqs.size());  // output row of each token
  size_t longest = 0;
  for (const auto& s : seqs) longest = std::max(longest, s.size());
  for (size_t p = 0; p < longest; ++p) {
    for (size_t s = 0; s < seqs.size(); ++s) {
      if (p >= seqs[s].size()) continue;
      row_of[s].push_back(b.size());
      b.Add(seqs[s][p], static_cast<int32_t>(p), first_seq_id + static_cast<int32_t>(s), false, false, true);
    }
  }
  std::vector<float> hidden(b.size() * kEmbd);
  const Status st = l.model->Run(b, *l.kv, ForwardOutputs{{}, hidden});
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<std::vector<float>> out(seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (int64_t r : row_of[s]) out[s].insert(out[s].end(), hidden.begin() + r * kEmbd, hidden.begin() + (r + 1) * kEmbd);
  }
  return out;
}

struct Error {
  double max_abs = 0.0, max_ref = 0.0;
  void Add(double got, double want) {
    max_abs = std::max(max_abs, std::abs(got - want));
    max_ref = std::max(max_ref, std::abs(want));
  }
  double rel() const { return max_abs / std::max(1.0, max_ref); }
};

// Hidden rows, mean and CLS pooling and the classifier on the CLS vector,
// engine against reference, over three sequences run in one batch.
struct Comparison {
  Error hidden, mean, cls;
};

Comparison Compare(const std::string& path) {
  Loaded l = Load(path);
  const testing::BertReference ref(*l.file);
  const std::vector<std::vector<int32_t>> seqs = {Tokens(7, 1), Tokens(20, 2), Tokens(1, 3)};
  const auto got = RunInterleaved(l, seqs);
  Comparison c;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto want = ref.Forward(seqs[s]);
    std::vector<float> mean(kEmbd, 0.0f);
    for (size_t i = 0; i < want.size(); ++i) {
      for (int d = 0; d < kEmbd; ++d) {
        c.hidden.Add(got[s][i * kEmbd + d], want[i][d]);
        mean[d] += got[s][i * kEmbd + d] / static_cast<float>(want.size());
      }
    }
    const auto want_mean = testing::BertReference::MeanPool(want);
    for (int d = 0; d < kEmbd; ++d) c.mean.Add(mean[d], want_mean[d]);
    // CLS pooling: the row of position 0, through the classifier head.
    std::vector<float> scores(l.model->n_classifier_outputs());
    const Status st = l.model->Classify(std::span<const float>(got[s].data(), kEmbd), scores);
    EXPECT_TRUE(st.ok()) << st.ToString();
    const auto want_scores = ref.Classify(want[0]);
    EXPECT_EQ(want_scores.size(), scores.size());
    for (size_t i = 0; i < scores.size(); ++i) c.cls.Add(scores[i], want_scores[i]);
  }
  return c;
}

class EncoderReferenceTest : public ::testing::TestWithParam<DType> {};

TEST_P(EncoderReferenceTest, HiddenPoolingAndClassifierMatchFloat64Reference) {
  const DType type = GetParam();
  const std::string path = WriteModel(BertSpec(type, /*rank*/ 4, 3), "ref");
  // 1) Scalar kernels: f32 dot products of the dequantized weights; only
  //    float rounding (and ExpApprox's 2e-7) separates them from float64.
  const kernels::Isa fastest = kernels::ActiveIsa();
  kernels::SetIsaForTesting(kernels::Isa::kScalar);
  const Comparison exact = Compare(path);
  kernels::SetIsaForTesting(fastest);
  EXPECT_LT(exact.hidden.rel(), 1e-4) << "scalar hidden " << exact.hidden.max_abs;
  EXPECT_LT(exact.mean.rel(), 1e-4) << "scalar mean " << exact.mean.max_abs;
  EXPECT_LT(exact.cls.rel(), 1e-4) << "scalar classifier " << exact.cls.max_abs;
  // 2) The fastest kernels round activations (bf16 GEMM operands, 8-bit
  //    activations for Q8_0, as model_reference_test.cc describes); each
  //    LayerNorm rescales, so the hidden rows stay within a few percent
  //    (AVX2: F16 4e-7, Q8_0 up to 3e-2 observed).
  const Comparison fast = Compare(path);
  const double bound = type == DType::kF32 ? 1e-4 : 0.1;
  EXPECT_LT(fast.hidden.rel(), bound) << kernels::IsaName(fastest) << " hidden " << fast.hidden.max_abs;
  EXPECT_LT(fast.mean.rel(), bound) << kernels::IsaName(fastest) << " mean " << fast.mean.max_abs;
  EXPECT_LT(fast.cls.rel(), bound) << kernels::IsaName(fastest) << " classifier " << fast.cls.max_abs;
  std::printf("[ bert %s ] relative error, scalar / %s kernels: hidden %.2g / %.2g, mean %.2g / %.2g, "
              "classifier %.2g / %.2g (bounds 1e-4 / %.2g)\n",
              DTypeName(type), kernels::IsaName(fastest), exact.hidden.rel(), fast.hidden.rel(), exact.mean.rel(),
              fast.mean.rel(), exact.cls.rel(), fast.cls.rel(), bound);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, EncoderReferenceTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kQ8_0),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

class EncoderModelTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = WriteModel(BertSpec(DType::kF16, /*cls*/ 2, 0), "embed"); }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(EncoderModelTest, ReportsEncoderTraits) {
  Loaded l = Load(path_);
  EXPECT_FALSE(l.model->causal());
  EXPECT_FALSE(l.model->generates());
  EXPECT_EQ(l.model->config().pooling, PoolingType::kCls);
  EXPECT_EQ(l.model->n_classifier_outputs(), 0);
  std::vector<float> pooled(kEmbd), out(1);
  EXPECT_EQ(l.model->Classify(pooled, out).code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(l.model->kv_cache_spec().layers.size(), 1u);
}

TEST_F(EncoderModelTest, SequenceRowsAreTheSameAloneAndInAnyBatchBitwise) {
  // max_batch_tokens 16 (scratch still holds one whole 48-position sequence):
  // the mixed batch runs as several micro-batches. Every ISA's matmul gives a
  // row the same bits at any token count, for every weight type
  // (tests/kernels/matmul_batch_invariance_test.cc).
  for (const DType type : {DType::kF32, DType::kF16, DType::kQ8_0}) {
    const std::string path = WriteModel(BertSpec(type, /*cls*/ 2, 0), std::string("embed-") + DTypeName(type));
    Loaded l = Load(path, 16);
    const std::vector<std::vector<int32_t>> seqs = {Tokens(9, 4), Tokens(5, 5), Tokens(17, 6), Tokens(40, 7),
                                                    Tokens(1, 8)};
    const auto mixed = RunInterleaved(l, seqs, 3);
    for (size_t s = 0; s < seqs.size(); ++s) {
      const auto alone = RunInterleaved(l, {seqs[s]}, 0);
      ASSERT_EQ(alone[0].size(), mixed[s].size());
      EXPECT_EQ(std::memcmp(alone[0].data(), mixed[s].data(), alone[0].size() * sizeof(float)), 0)
          << DTypeName(type) << ": sequence " << s << " differs alone and in a batch";
    }
    std::filesystem::remove(path);
  }
}

TEST_F(EncoderModelTest, WritesOnlyTheRowsThatWantHidden) {
  Loaded l = Load(path_);
  const auto tokens = Tokens(6, 9);
  const auto all = RunInterleaved(l, {tokens});
  Batch b;
  for (int i = 0; i < 6; ++i) b.Add(tokens[i], i, 0, false, false, i == 0 || i == 4);
  std::vector<float> hidden(2 * kEmbd);
  ASSERT_TRUE(l.model->Run(b, *l.kv, ForwardOutputs{{}, hidden}).ok());
  EXPECT_EQ(std::memcmp(hidden.data(), all[0].data(), kEmbd * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(hidden.data() + kEmbd, all[0].data() + 4 * kEmbd, kEmbd * sizeof(float)), 0);
}

// The status of running `b` (hidden rows for every token).
Status RunBatch(Loaded& l, const Batch& b) {
  std::vector<float> hidden(std::max<int64_t>(b.size(), 1) * kEmbd);
  return l.model->Run(b, *l.kv, ForwardOutputs{{}, hidden});
}

TEST_F(EncoderModelTest, RefusesPartialSequences) {
  Loaded l = Load(path_);
  Batch tail;  // a continuation chunk: positions 3.. without 0..2
  for (int i = 3; i < 6; ++i) tail.Add(7, i, 0, false, false, true);
  Status st = RunBatch(l, tail);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("whole"), std::string::npos) << st.ToString();

  Batch gap;
  gap.Add(7, 0, 1, false, false, true);
  gap.Add(8, 2, 1, false, false, true);
  EXPECT_EQ(RunBatch(l, gap).code(), StatusCode::kInvalidArgument);

  Batch repeated;
  repeated.Add(7, 0, 2, false, false, true);
  repeated.Add(8, 0, 2, false, false, true);
  EXPECT_EQ(RunBatch(l, repeated).code(), StatusCode::kInvalidArgument);

  Batch too_long;  // position_embd holds 48 positions
  for (int i = 0; i < 49; ++i) too_long.Add(7, i, 0, false, false, true);
  st = RunBatch(l, too_long);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("longer"), std::string::npos) << st.ToString();
}

TEST_F(EncoderModelTest, RefusesLogitsAndSmallBuffers) {
  Loaded l = Load(path_);
  Batch b;
  b.Add(7, 0, 0, false, false, true);
  b.Add(8, 1, 0, true, false, true);
  Status st = RunBatch(l, b);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("logits"), std::string::npos) << st.ToString();

  b.Clear();
  b.Add(7, 0, 0, false, false, true);
  b.Add(8, 1, 0, false, false, true);
  std::vector<float> small(kEmbd);
  EXPECT_EQ(l.model->Run(b, *l.kv, ForwardOutputs{{}, small}).code(), StatusCode::kInvalidArgument);
  b.Clear();
  b.Add(300, 0, 0, false, false, true);  // outside the vocabulary
  EXPECT_EQ(RunBatch(l, b).code(), StatusCode::kInvalidArgument);
}

TEST(EncoderWriterTest, WritesLlamaCppNamesAndAWordPieceVocabulary) {
  const RandomModelSpec spec = BertSpec(DType::kQ8_0, 4, 1);
  auto w = BuildRandomModel(spec);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::string path = WriteModel(spec, "names");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok());
  for (const char* t : {"token_embd.weight", "token_types.weight", "position_embd.weight", "token_embd_norm.weight",
                        "token_embd_norm.bias", "blk.1.attn_q.bias", "blk.1.attn_output_norm.bias",
                        "blk.1.ffn_up.bias", "blk.1.ffn_down.weight", "blk.1.layer_output_norm.weight", "cls.weight",
                        "cls.bias", "cls.output.weight", "cls.output.bias"}) {
    EXPECT_NE((*f)->FindTensor(t), nullptr) << t;
  }
  EXPECT_EQ((*f)->FindTensor("position_embd.weight")->type, DType::kF32);  // the converter keeps it F32
  const GgufMetadata& md = (*f)->metadata();
  EXPECT_EQ(md.GetInt("bert.pooling_type").value(), 4);
  EXPECT_FALSE(md.GetBoolOr("bert.attention.causal", true).value());
  EXPECT_NEAR(md.GetFloatOr("bert.attention.layer_norm_epsilon", 0).value(), 1e-12, 1e-18);
  auto tok = Tokenizer::FromMetadata(md);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::vector<TokenId> ids = (*tok)->Encode("Hello, world", /*add_special=*/true, /*parse_special=*/false);
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 2);  // [CLS]
  EXPECT_EQ(ids.back(), 3);   // [SEP]
  std::filesystem::remove(path);
}

TEST(EncoderWriterTest, RefusesRankPoolingWithoutAHead) {
  EXPECT_FALSE(ValidateRandomModelSpec(BertSpec(DType::kF16, 4, 0)).ok());
  RandomModelSpec gqa = BertSpec(DType::kF16, 1, 0);
  gqa.n_head_kv = 2;
  EXPECT_FALSE(ValidateRandomModelSpec(gqa).ok());
}

}  // namespace
}  // namespace pagoda
