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

TEST(MetricsTextTest, ClassSeriesAndClassCounters) {
  EngineStats s;
  s.requests_running_by_class = {5, 2, 1};  // batch, interactive, realtime
  s.requests_waiting_by_class = {7, 0, 3};
  s.preemptions_class_total = 4;
  s.preemptions_share_total = 6;
  s.steps_interrupted_total = 9;
  const std::string text = RenderPrometheus(s, "m");
  for (const char* line : {
           "pagoda:num_requests_running_by_class{model_name=\"m\",workload_class=\"batch\"} 5\n",
           "pagoda:num_requests_running_by_class{model_name=\"m\",workload_class=\"interactive\"} 2\n",
           "pagoda:num_requests_running_by_class{model_name=\"m\",workload_class=\"realtime\"} 1\n",
           "pagoda:num_requests_waiting_by_class{model_name=\"m\",workload_class=\"batch\"} 7\n",
           "pagoda:num_requests_waiting_by_class{model_name=\"m\",workload_class=\"realtime\"} 3\n",
           "pagoda:num_preemptions_class_total{model_name=\"m\"} 4\n",
           "pagoda:num_preemptions_share_total{model_name=\"m\"} 6\n",
           "pagoda:num_steps_interrupted_total{model_name=\"m\"} 9\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(text.find("# TYPE pagoda:num_requests_running_by_class gauge"),
            text.rfind("# TYPE pagoda:num_requests_running_by_class gauge"));  // one family
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

TEST(MetricsTextTest, TlsHandshakeFailuresAreACounter) {
  http::ServerStats s;
  s.tls_handshake_failures = 7;
  const std::string text = RenderPrometheus(s, "m");
  EXPECT_NE(text.find("# TYPE pagoda:tls_handshake_failures_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pagoda:tls_handshake_failures_total{model_name=\"m\"} 7\n"), std::string::npos) << text;
}

TEST(MetricsTextTest, VllmRequestHistogramsCarryTheModelName) {
  EngineStats s;
  s.request_prompt_tokens.Observe(37);
  s.request_generation_tokens.Observe(12);
  s.request_max_generation_tokens.Observe(12);
  s.request_prefill_time.Observe(0.04);
  s.request_decode_time.Observe(0.9);
  const std::string text = RenderPrometheus(s, "m");
  for (const char* name : {"request_prompt_tokens", "request_generation_tokens", "request_max_num_generation_tokens",
                           "request_prefill_time_seconds", "request_decode_time_seconds"}) {
    const std::string p = std::string("pagoda:") + name;
    EXPECT_NE(text.find("# TYPE " + p + " histogram\n"), std::string::npos) << name;
    EXPECT_NE(text.find(p + "_count{model_name=\"m\"} 1\n"), std::string::npos) << name;
  }
  // 37 tokens: in the 50 bucket (1-2-5 series), not the 20 one.
  EXPECT_NE(text.find("pagoda:request_prompt_tokens_bucket{model_name=\"m\",le=\"20\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("pagoda:request_prompt_tokens_bucket{model_name=\"m\",le=\"50\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("pagoda:request_prompt_tokens_sum{model_name=\"m\"} 37\n"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::server
