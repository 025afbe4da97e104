#include "engine/engine.h"

#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "engine/engine_test_util.h"

namespace pagoda::testing {
namespace {

TEST(EngineTest, CancellationFreesBlocksAtTheNextStep) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  auto h = engine->Submit(Greedy(Ramp(10), 50));
  ASSERT_TRUE(h.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine->Step());
  EXPECT_GT(engine->kv_cache().usage(), 0.0);
  (*h)->Cancel();
  engine->Step();
  EXPECT_EQ(engine->kv_cache().usage(), 0.0);
  EXPECT_EQ(engine->stats().kv_usage, 0.0);
  EXPECT_EQ(engine->stats().requests_running, 0);
  std::vector<Outcome> out;
  Drain(**h, out);
  ASSERT_TRUE(out[0].finished);
  EXPECT_EQ(out[0].final_event.finish, FinishReason::kCancelled);
  EXPECT_EQ(out[0].final_event.usage.tokens_completion, 3);
  EXPECT_TRUE((*h)->done());
  EXPECT_EQ(engine->stats().requests_cancelled_total, 1);
}

TEST(EngineTest, CancellingOneSequenceLeavesItsSiblingsRunning) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  EngineRequest r = Greedy(Ramp(10), 12);
  r.n = 3;
  auto h = engine->Submit(r);
  ASSERT_TRUE(h.ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(engine->Step());
  (*h)->CancelSequence(1);
  (*h)->CancelSequence(7);   // out of range: ignored
  (*h)->CancelSequence(-1);  // likewise
  engine->Step();
  EXPECT_EQ(engine->stats().requests_running, 2);  // sequence 1 left, its slot and blocks released
  RunUntilIdle(*engine);
  std::vector<Outcome> out;
  Drain(**h, out);
  ASSERT_EQ(out.size(), 3u);
  const std::vector<int32_t> want = FakeModel::Greedy(Ramp(10), 12);
  for (int i : {0, 2}) {
    EXPECT_EQ(out[i].final_event.finish, FinishReason::kLength) << i;
    EXPECT_EQ(out[i].tokens, want) << i;
  }
  EXPECT_EQ(out[1].final_event.finish, FinishReason::kCancelled);
  EXPECT_LT(out[1].tokens.size(), want.size());
  EXPECT_EQ(engine->stats().requests_cancelled_total, 1);
  EXPECT_EQ(engine->kv_cache().usage(), 0.0);
}

// log softmax of FakeModel's logits after `prefix`, at token t.
double FakeLogprob(const std::vector<int32_t>& prefix, int32_t t) {
  const int32_t next = FakeModel::Next(prefix);
  std::vector<double> l(FakeModel::kVocab);
  for (int64_t j = 0; j < FakeModel::kVocab; ++j) {
    l[j] = j == next ? 4.0 : -static_cast<double>((j * 7 + static_cast<int64_t>(prefix.size())) % 13) * 0.25;
  }
  double m = l[0], sum = 0;
  for (double v : l) m = std::max(m, v);
  for (double v : l) sum += std::exp(v - m);
  return l[t] - m - std::log(sum);
}

TEST(EngineTest, PromptLogprobsReportEveryPromptTokenOnceBeforeTheFirstSample) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());  // 16-token steps: the prompt takes two chunks
  const std::vector<int32_t> prompt = Ramp(22);
  // The same prompt first: its blocks are cached, but the reporting sequence must not adopt them.
  auto warm = engine->Submit(Greedy(prompt, 2));
  RunUntilIdle(*engine);
  EngineRequest r = Greedy(prompt, 5);
  r.n = 2;
  r.prompt_logprobs = true;
  r.logprobs = true;
  r.top_logprobs = 3;
  auto h = engine->Submit(r);
  ASSERT_TRUE(h.ok());
  RunUntilIdle(*engine);
  std::vector<int32_t> positions[2];
  std::vector<int32_t> generated[2];
  while (auto e = (*h)->TryPop()) {
    ASSERT_TRUE(e->index == 0 || e->index == 1);
    if (e->prompt) {
      ASSERT_EQ(e->index, 0) << "only sequence 0 reports the prompt";
      ASSERT_TRUE(generated[0].empty()) << "a prompt event after a sampled token";
      ASSERT_FALSE(e->is_final());
      const int32_t p = e->prompt_position;
      positions[0].push_back(p);
      ASSERT_GE(p, 1);
      EXPECT_EQ(e->token, prompt[p]);
      const std::vector<int32_t> prefix(prompt.begin(), prompt.begin() + p);
      EXPECT_NEAR(e->logprob, FakeLogprob(prefix, prompt[p]), 1e-5) << p;
      ASSERT_EQ(e->top_logprobs.size(), 3u);
      EXPECT_EQ(e->top_logprobs[0].id, FakeModel::Next(prefix));
      EXPECT_NEAR(e->top_logprobs[0].logprob, FakeLogprob(prefix, FakeModel::Next(prefix)), 1e-5);
      continue;
    }
    if (e->has_token()) generated[e->index].push_back(e->token);
    if (e->is_final() && e->index == 0) EXPECT_EQ(e->usage.tokens_cached, 0);
  }
  std::vector<int32_t> want_positions;
  for (int32_t p = 1; p < static_cast<int32_t>(prompt.size()); ++p) want_positions.push_back(p);
  EXPECT_EQ(positions[0], want_positions);
  EXPECT_EQ(generated[0], FakeModel::Greedy(prompt, 5));
  EXPECT_EQ(generated[1], FakeModel::Greedy(prompt, 5));
  EXPECT_EQ(engine->kv_cache().usage(), 0.0);
}

TEST(EngineTest, PromptLogprobRowsPerStepAreBounded) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.max_batch_tokens = 128;
  auto engine = MakeEngine(model, o);
  const std::vector<int32_t> prompt = Ramp(100);
  EngineRequest r = Greedy(prompt, 2);
  r.prompt_logprobs = true;
  auto h = engine->Submit(r);
  RunUntilIdle(*engine);
  for (const Batch& b : model.batches) EXPECT_LE(b.n_outputs(), kPromptLogprobRows);
  EXPECT_GE(model.batches.size(), 2u);  // the 100-token prompt took more than one step
  int32_t next = 1;
  std::vector<int32_t> generated;
  while (auto e = (*h)->TryPop()) {
    if (e->prompt) {
      EXPECT_EQ(e->prompt_position, next++);
      const std::vector<int32_t> prefix(prompt.begin(), prompt.begin() + e->prompt_position);
      EXPECT_NEAR(e->logprob, FakeLogprob(prefix, prompt[e->prompt_position]), 1e-5);
    } else if (e->has_token()) {
      generated.push_back(e->token);
    }
  }
  EXPECT_EQ(next, 100);
  EXPECT_EQ(generated, FakeModel::Greedy(prompt, 2));
}

TEST(EngineTest, CancelledBeforeAdmissionNeverRuns) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  auto h = engine->Submit(Greedy(Ramp(10), 5));
  (*h)->Cancel();
  EXPECT_FALSE(engine->Step());
  EXPECT_TRUE(model.batches.empty());
  auto e = (*h)->Pop();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->finish, FinishReason::kCancelled);
  EXPECT_FALSE((*h)->Pop().has_value());
}

TEST(EngineTest, FullWaitingQueueIsResourceExhausted) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.max_waiting = 3;
  auto engine = MakeEngine(model, o);
  ASSERT_TRUE(engine->Submit(Greedy(Ramp(4), 2)).ok());
  EngineRequest two = Greedy(Ramp(4), 2);
  two.n = 2;
  ASSERT_TRUE(engine->Submit(two).ok());
  auto full = engine->Submit(Greedy(Ramp(4), 2));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(engine->stats().requests_rejected_total, 1);
  EXPECT_EQ(engine->stats().requests_waiting, 3);
  engine->Step();  // admits all three: room again
  EXPECT_TRUE(engine->Submit(Greedy(Ramp(4), 2)).ok());
}

TEST(EngineTest, RejectsInvalidRequests) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  EXPECT_EQ(engine->Submit(Greedy({}, 2)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->Submit(Greedy(Ramp(128), 2)).status().code(), StatusCode::kInvalidArgument);  // n_ctx 128
  EXPECT_EQ(engine->Submit(Greedy({1, 64}, 2)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->Submit(Greedy(Ramp(4), -1)).status().code(), StatusCode::kInvalidArgument);
  EngineRequest r = Greedy(Ramp(4), 2);
  r.top_logprobs = 21;
  EXPECT_EQ(engine->Submit(r).status().code(), StatusCode::kInvalidArgument);
  r = Greedy(Ramp(4), 2);
  r.sampling.top_p = 0;
  EXPECT_EQ(engine->Submit(r).status().code(), StatusCode::kInvalidArgument);
}

TEST(EngineTest, PassedDeadlineFinishesWithAnError) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  EngineRequest r = Greedy(Ramp(6), 100);
  // Far enough ahead that a loaded machine still runs the first step in time.
  r.deadline = EngineClock::now() + std::chrono::milliseconds(250);
  auto h = engine->Submit(r);
  ASSERT_TRUE(engine->Step());
  std::this_thread::sleep_until(*r.deadline + std::chrono::milliseconds(5));
  engine->Step();
  std::vector<Outcome> out;
  Drain(**h, out);
  ASSERT_TRUE(out[0].finished);
  EXPECT_EQ(out[0].final_event.finish, FinishReason::kError);
  EXPECT_EQ(out[0].final_event.error.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(out[0].tokens.size(), 1u);
  EXPECT_EQ(engine->kv_cache().usage(), 0.0);
}

TEST(EngineTest, StopTokenAndEogEndGeneration) {
  FakeModel model;
  const std::vector<int32_t> want = FakeModel::Greedy(Ramp(5), 8);
  EngineOptions o = FakeOptions();
  o.is_eog = [&](TokenId id) { return id == want[5]; };
  auto engine = MakeEngine(model, o);
  EngineRequest stop = Greedy(Ramp(5), 8);
  stop.stop_tokens = {want[2]};
  auto hs = engine->Submit(stop);
  auto he = engine->Submit(Greedy(Ramp(5), 8));
  EngineRequest ignore = Greedy(Ramp(5), 8);
  ignore.ignore_eog = true;
  auto hi = engine->Submit(ignore);
  RunUntilIdle(*engine);
  std::vector<Outcome> os, oe, oi;
  Drain(**hs, os);
  Drain(**he, oe);
  Drain(**hi, oi);
  EXPECT_EQ(os[0].final_event.finish, FinishReason::kStop);
  EXPECT_EQ(os[0].tokens, std::vector<int32_t>(want.begin(), want.begin() + 3));
  EXPECT_EQ(oe[0].final_event.finish, FinishReason::kEog);
  EXPECT_EQ(oe[0].tokens, std::vector<int32_t>(want.begin(), want.begin() + 6));
  EXPECT_EQ(oi[0].final_event.finish, FinishReason::kLength);
  EXPECT_EQ(oi[0].tokens, want);
}

TEST(EngineTest, ReportsLogprobsOfTheRawLogits) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  EngineRequest r = Greedy(Ramp(5), 2);
  r.logprobs = true;
  r.top_logprobs = 3;
  auto h = engine->Submit(r);
  RunUntilIdle(*engine);
  auto e = (*h)->Pop();
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->top_logprobs.size(), 3u);
  EXPECT_EQ(e->top_logprobs[0].id, e->token);
  EXPECT_FLOAT_EQ(e->top_logprobs[0].logprob, e->logprob);
  EXPECT_LT(e->logprob, 0.0f);
  EXPECT_GT(e->logprob, -1.0f);  // logit 4 against others <= 0
}

TEST(EngineTest, LengthStopsAtTheContextSizeAsGenerator) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.n_ctx = 12;
  auto engine = MakeEngine(model, o);
  auto h = engine->Submit(Greedy(Ramp(8), 100));
  RunUntilIdle(*engine);
  std::vector<Outcome> out;
  Drain(**h, out);
  EXPECT_EQ(out[0].final_event.finish, FinishReason::kLength);
  EXPECT_EQ(out[0].tokens.size(), 5u);  // n_ctx + 1 tokens in all: the last is never fed back
}

TEST(EngineTest, ThreadServesConcurrentSubmittersAndDrainsOnStop) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  engine->Start();
  std::vector<std::thread> clients;
  std::vector<std::vector<int32_t>> got(8);
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      auto h = engine->Submit(Greedy(Ramp(5 + i, 3 * i), 6));
      ASSERT_TRUE(h.ok()) << h.status().ToString();
      while (auto e = (*h)->Pop()) {
        if (e->has_token()) got[i].push_back(e->token);
      }
    });
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i], FakeModel::Greedy(Ramp(5 + i, 3 * i), 6)) << i;
  auto last = engine->Submit(Greedy(Ramp(5), 4));
  ASSERT_TRUE(last.ok());
  engine->Stop(std::chrono::seconds(10));  // drains: the queued request completes
  std::vector<Outcome> out;
  Drain(**last, out);
  EXPECT_EQ(out[0].final_event.finish, FinishReason::kLength);
  EXPECT_EQ(engine->Submit(Greedy(Ramp(5), 4)).status().code(), StatusCode::kFailedPrecondition);
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.requests_finished_total, 9);
  EXPECT_EQ(s.generation_tokens_total, 8 * 6 + 4);
  EXPECT_EQ(s.time_to_first_token.count, 9);
  EXPECT_EQ(s.e2e_request_latency.count, 9);
  EXPECT_EQ(s.request_queue_time.count, 9);
  EXPECT_EQ(s.inter_token_latency.count, 8 * 5 + 3);
}

TEST(EngineTest, StopWithoutDrainTimeEndsOpenRequestsWithAnError) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  auto h = engine->Submit(Greedy(Ramp(5), 50));
  engine->Step();
  engine->Stop();
  std::vector<Outcome> out;
  Drain(**h, out);
  ASSERT_TRUE(out[0].finished);
  EXPECT_EQ(out[0].final_event.finish, FinishReason::kError);
  EXPECT_EQ(out[0].final_event.error.code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace pagoda::testing
