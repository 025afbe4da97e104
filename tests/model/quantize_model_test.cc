#include "model/quantize_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include "kernels/cpu/quantize.h"
#include "model/model.h"
#include "model/random_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

std::string TempPath(const std::string& name) {
  return (::pagoda::testing::TempDirForProcess() / ("pagoda_qm_" + name)).string();
}

std::vector<float> Row(const TensorView& t, int64_t r) {
  std::vector<float> v(t.ne[0]);
  EXPECT_TRUE(kernels::DequantizeRow(t.type, t.row(r), v.data(), t.ne[0]).ok());
  return v;
}

// Relative RMS error of every tensor of `out` against `in` (same names).
std::map<std::string, double> RelativeErrors(const GgufFile& in, const GgufFile& out) {
  std::map<std::string, double> errs;
  for (const GgufTensorInfo& info : in.tensors()) {
    const TensorView a = in.View(info);
    auto b = out.GetTensor(info.name);
    EXPECT_TRUE(b.ok()) << info.name;
    if (!b.ok()) continue;
    double err = 0, norm = 0;
    for (int64_t r = 0; r < a.rows(); ++r) {
      auto x = Row(a, r), y = Row(*b, r);
      for (size_t i = 0; i < x.size(); ++i) {
        err += double(x[i] - y[i]) * (x[i] - y[i]);
        norm += double(x[i]) * x[i];
      }
    }
    errs[info.name] = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
  }
  return errs;
}

std::string WriteRandom(DType type, const std::string& name) {
  RandomModelSpec spec;
  spec.n_embd = 256;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 512;
  spec.n_vocab = 320;
  spec.weight_type = type;
  spec.seed = 21;
  const std::string path = TempPath(name);
  EXPECT_TRUE(WriteRandomModel(spec, path).ok());
  return path;
}

struct TypeCase {
  const char* name;
  DType type;
  double max_rel_err;  // per matrix, on the random model's N(0, sigma) weights
};

class QuantizeModelTypes : public ::testing::TestWithParam<TypeCase> {};

// Every tensor gets the documented type, the file loads, and each matrix
// dequantizes to within the type's error of the F32 input.
TEST_P(QuantizeModelTypes, WritesLoadableModelWithExpectedTypesAndBoundedError) {
  const TypeCase c = GetParam();
  const std::string in_path = WriteRandom(DType::kF32, std::string("in_") + c.name + ".gguf");
  const std::string out_path = TempPath(std::string("out_") + c.name + ".gguf");
  ThreadPool pool(2);
  QuantizeModelOptions opt;
  opt.type = c.type;
  QuantizeModelReport rep;
  ASSERT_TRUE(QuantizeModelFile(in_path, out_path, opt, pool, &rep).ok());
  auto in = GgufFile::Open(in_path);
  auto out = GgufFile::Open(out_path);
  ASSERT_TRUE(in.ok() && out.ok());
  EXPECT_EQ(rep.n_tensors, static_cast<int64_t>((*in)->tensors().size()));
  EXPECT_EQ((*out)->tensors().size(), (*in)->tensors().size());
  EXPECT_EQ(*(*out)->metadata().GetString("general.architecture"), "llama");
  EXPECT_TRUE((*out)->metadata().Has("tokenizer.ggml.tokens"));
  EXPECT_GT(*(*out)->metadata().GetInt("general.file_type"), 0);
  for (const GgufTensorInfo& t : (*out)->tensors()) {
    DType want;
    if (t.n_dims == 1) {
      want = DType::kF32;
    } else if (t.name == "output.weight") {
      want = c.type == DType::kQ8_0 ? DType::kQ8_0 : DType::kQ6_K;
    } else {
      want = c.type;  // token_embd and every linear weight
    }
    EXPECT_EQ(t.type, want) << t.name;
  }
  for (const auto& [name, err] : RelativeErrors(**in, **out)) {
    EXPECT_LT(err, c.max_rel_err) << name;
  }
  ThreadPool model_pool(1);
  auto model = LoadModel(out_path, model_pool);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  std::filesystem::remove(in_path);
  std::filesystem::remove(out_path);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeModelTypes,
                         ::testing::Values(TypeCase{"q8_0", DType::kQ8_0, 0.01}, TypeCase{"q4_0", DType::kQ4_0, 0.13},
                                           TypeCase{"q4_1", DType::kQ4_1, 0.11}, TypeCase{"q5_0", DType::kQ5_0, 0.065},
                                           TypeCase{"q4_k", DType::kQ4_K, 0.10}),
                         [](const auto& info) { return std::string(info.param.name); });

// stories260K (F32, n_embd 64, n_ff 172): rows of 172 are not whole blocks,
// so ffn_down falls back to F16; rows of 64 cannot be Q4_K (256) -> Q5_0.
TEST(QuantizeModelTest, FallsBackWhereRowsAreNotWholeBlocks) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  auto in = GgufFile::Open(pagoda::testing::TestDataPath("stories260K.gguf"));
  ASSERT_TRUE(in.ok());
  ThreadPool pool(2);
  QuantizeModelOptions opt;
  opt.type = DType::kQ4_K;
  auto w = QuantizeModel(**in, opt, pool);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::vector<uint8_t> bytes = w->Serialize();
  auto parsed = ParseGguf(bytes.data(), bytes.size());
  ASSERT_TRUE(parsed.ok());
  std::map<std::string, DType> types;
  for (const GgufTensorInfo& t : parsed->tensors) types[t.name] = t.type;
  EXPECT_EQ(types["blk.0.ffn_down.weight"], DType::kF16);
  EXPECT_EQ(types["blk.0.attn_q.weight"], DType::kQ5_0);
  EXPECT_EQ(types["output.weight"], DType::kQ8_0);  // Q6_K needs rows of 256
  EXPECT_EQ(types["blk.0.attn_norm.weight"], DType::kF32);
}

TEST(QuantizeModelTest, RefusesAlreadyQuantizedInputsWithTheTensorName) {
  const std::string path = WriteRandom(DType::kQ4_0, "q4_in.gguf");
  ThreadPool pool(1);
  QuantizeModelOptions opt;
  opt.type = DType::kQ4_K;
  Status st = QuantizeModelFile(path, TempPath("never.gguf"), opt, pool);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("token_embd.weight"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("Q4_0"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(TempPath("never.gguf")));
  // Same type in and out: nothing to re-round, copied as is.
  opt.type = DType::kQ4_0;
  auto in = GgufFile::Open(path);
  ASSERT_TRUE(in.ok());
  auto w = QuantizeModel(**in, opt, pool);
  EXPECT_FALSE(w.ok());  // output.weight would need Q6_K from Q4_0
  std::filesystem::remove(path);
}

TEST(QuantizeModelTest, ParsesOnlyTheSupportedTypeNames) {
  for (const char* ok : {"q8_0", "Q4_0", "q4_1", "q5_0", "q4_k"}) EXPECT_TRUE(ParseQuantizeType(ok).ok()) << ok;
  for (const char* bad : {"", "q3_k", "f16", "q4", "q6_k"}) EXPECT_FALSE(ParseQuantizeType(bad).ok()) << bad;
}

TEST(QuantizeModelTest, MissingInputIsAnError) {
  ThreadPool pool(1);
  Status st = QuantizeModelFile(TempPath("does_not_exist.gguf"), TempPath("x.gguf"), {}, pool);
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace pagoda
