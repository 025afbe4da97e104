#include "gateway/rollout_spec.h"

#include <gtest/gtest.h>

namespace pagoda::gateway {
namespace {

std::string ParamOf(const api::ApiResult<RolloutSpec>& r) { return r.ok() ? "<ok>" : r.error().param.value_or(""); }

TEST(RolloutSpecTest, DefaultsApplyToAMinimalBody) {
  auto s = ParseRolloutSpec(R"({"model":"m","version":"v2"})");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->model, "m");
  EXPECT_EQ(s->version, "v2");
  EXPECT_EQ(s->steps, (std::vector<double>{10, 25, 50, 100}));
  EXPECT_EQ(s->step_interval.count(), 30'000);
  EXPECT_DOUBLE_EQ(s->max_error_rate, 0.05);
}

TEST(RolloutSpecTest, ReadsEveryField) {
  auto s = ParseRolloutSpec(R"({"model":"m","version":"v2","steps":[5,100],"step_interval_ms":250,
    "max_error_rate":0,"probe_interval_ms":50,"health_passes":3,"max_probe_failures":1,"health_timeout_ms":900})");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->steps, (std::vector<double>{5, 100}));
  EXPECT_EQ(s->step_interval.count(), 250);
  EXPECT_DOUBLE_EQ(s->max_error_rate, 0);
  EXPECT_EQ(s->probe_interval.count(), 50);
  EXPECT_EQ(s->health_passes, 3);
  EXPECT_EQ(s->max_probe_failures, 1);
  EXPECT_EQ(s->health_timeout.count(), 900);
}

TEST(RolloutSpecTest, BadBodiesNameTheirField) {
  EXPECT_FALSE(ParseRolloutSpec("not json").ok());
  EXPECT_FALSE(ParseRolloutSpec("[1]").ok());
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"version":"v2"})")), "model");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":""})")), "version");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","extra":1})")), "extra");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","steps":[10,50]})")), "steps");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","steps":[50,10,100]})")), "steps");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","steps":[0,100]})")), "steps");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","steps":["10",100]})")), "steps");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","steps":[]})")), "steps");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","step_interval_ms":"5"})")), "step_interval_ms");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","step_interval_ms":0})")), "step_interval_ms");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","max_error_rate":1.5})")), "max_error_rate");
  EXPECT_EQ(ParamOf(ParseRolloutSpec(R"({"model":"m","version":"v2","health_passes":0})")), "health_passes");
}

}  // namespace
}  // namespace pagoda::gateway
