#include "server/metrics_text.h"

#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

TEST(MetricsTextTest, HistogramBucketsAreCumulative) {
  EngineStats s;
  s.requests_running = 3;
  s.time_to_first_token.Observe(0.0005);
  s.time_to_first_token.Observe(1e9);
  std::string text = RenderPrometheus(s, "m");
  EXPECT_NE(text.find("pagoda:num_requests_running{model_name=\"m\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE pagoda:time_to_first_token_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("pagoda:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("pagoda:time_to_first_token_seconds_count{model_name=\"m\"} 2\n"), std::string::npos);
  // The first bucket holds the small observation, and every later finite one too.
  std::string last = "pagoda:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"";
  const size_t inf_line = text.rfind('\n', text.find(last + "+Inf\""));
  size_t pos = text.rfind(last, inf_line);
  ASSERT_NE(pos, std::string::npos);
  EXPECT_EQ(text.substr(text.find("} ", pos) + 2, 1), "1");  // the largest finite bound: 1 of 2
}

TEST(MetricsTextTest, IterationTokensIsAHistogramOfTokensPerStep) {
  EngineStats s;
  s.iteration_tokens.Observe(1);
  s.iteration_tokens.Observe(16);
  s.iteration_tokens.Observe(17);
  std::string text = RenderPrometheus(s, "m");
  EXPECT_NE(text.find("# TYPE pagoda:iteration_tokens_total histogram\n"), std::string::npos);
  EXPECT_NE(text.find("pagoda:iteration_tokens_total_bucket{model_name=\"m\",le=\"1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("pagoda:iteration_tokens_total_bucket{model_name=\"m\",le=\"16\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("pagoda:iteration_tokens_total_bucket{model_name=\"m\",le=\"32\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("pagoda:iteration_tokens_total_sum{model_name=\"m\"} 34\n"), std::string::npos);
  EXPECT_NE(text.find("pagoda:iteration_tokens_total_count{model_name=\"m\"} 3\n"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::server
