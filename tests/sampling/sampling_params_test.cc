#include "sampling/sampling_params.h"

#include <cmath>

#include <gtest/gtest.h>

namespace pagoda {
namespace {

void ExpectInvalid(const SamplingParams& p, const std::string& field) {
  Status st = p.Validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << field;
  EXPECT_NE(st.message().find(field), std::string::npos) << st.message();
}

TEST(SamplingParamsTest, DefaultsAreValid) {
  EXPECT_TRUE(SamplingParams{}.Validate().ok());
  EXPECT_TRUE(SamplingParams{}.ValidateForVocab(10).ok());
}

TEST(SamplingParamsTest, RejectsOutOfRangeValuesNamingTheField) {
  SamplingParams p;
  p.temperature = -0.1f;
  ExpectInvalid(p, "temperature");
  p.temperature = NAN;
  ExpectInvalid(p, "temperature");
  p = {};
  p.top_k = -1;
  ExpectInvalid(p, "top_k");
  for (float v : {0.0f, -0.5f, 1.01f, NAN}) {
    p = {};
    p.top_p = v;
    ExpectInvalid(p, "top_p");
  }
  for (float v : {-0.01f, 1.5f, NAN}) {
    p = {};
    p.min_p = v;
    ExpectInvalid(p, "min_p");
  }
  for (float v : {0.0f, -1.0f, INFINITY, NAN}) {
    p = {};
    p.repetition_penalty = v;
    ExpectInvalid(p, "repetition_penalty");
  }
  p = {};
  p.penalty_last_n = -2;
  ExpectInvalid(p, "penalty_last_n");
  p = {};
  p.presence_penalty = 2.5f;
  ExpectInvalid(p, "presence_penalty");
  p = {};
  p.frequency_penalty = -2.1f;
  ExpectInvalid(p, "frequency_penalty");
  p = {};
  p.logit_bias[3] = NAN;
  ExpectInvalid(p, "logit_bias");
  p.logit_bias[3] = INFINITY;
  ExpectInvalid(p, "logit_bias");
}

TEST(SamplingParamsTest, AcceptsBoundaryValues) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.penalty_last_n = -1;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.logit_bias[0] = -INFINITY;
  EXPECT_TRUE(p.Validate().ok()) << p.Validate().ToString();
}

TEST(SamplingParamsTest, LogitBiasIdsMustBeInVocabulary) {
  SamplingParams p;
  p.logit_bias[99] = 1.0f;
  EXPECT_TRUE(p.ValidateForVocab(100).ok());
  Status st = p.ValidateForVocab(99);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("99"), std::string::npos) << st.message();
  p.logit_bias = {{-1, 1.0f}};
  EXPECT_FALSE(p.ValidateForVocab(100).ok());
}

}  // namespace
}  // namespace pagoda
