// Scheduling behaviour, driven through an Engine over FakeModel with Step():
// token budget, chunked prefill, admission with prefix adoption, preemption.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include "engine/engine_test_util.h"

namespace pagoda::testing {
namespace {

int64_t TokensOf(const Batch& b, int32_t seq) {
  int64_t n = 0;
  for (int32_t s : b.seq_ids) n += s == seq;
  return n;
}

TEST(SchedulerTest, SplitsALongPromptAcrossStepsUnderTheBudget) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.max_batch_tokens = 8;
  auto engine = MakeEngine(model, o);
  auto h = engine->Submit(Greedy(Ramp(20), 3));
  ASSERT_TRUE(h.ok());
  RunUntilIdle(*engine);
  std::vector<int64_t> sizes;
  for (const Batch& b : model.batches) sizes.push_back(b.size());
  EXPECT_EQ(sizes, (std::vector<int64_t>{8, 8, 4, 1, 1}));
  EXPECT_EQ(model.batches[2].n_outputs(), 1);  // only the last prompt chunk yields logits
  EXPECT_EQ(model.batches[0].n_outputs(), 0);
  std::vector<Outcome> out;
  Drain(**h, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tokens, FakeModel::Greedy(Ramp(20), 3));
  EXPECT_EQ(out[0].final_event.finish, FinishReason::kLength);
  EXPECT_EQ(out[0].final_event.usage.tokens_prompt, 20);
  EXPECT_EQ(out[0].final_event.usage.tokens_completion, 3);
}

TEST(SchedulerTest, InterleavesChunkedPrefillWithRunningDecodes) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.max_batch_tokens = 8;
  auto engine = MakeEngine(model, o);
  auto a = engine->Submit(Greedy(Ramp(3, 5), 12, "a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(engine->Step());  // a's prompt, first token sampled
  auto b = engine->Submit(Greedy(Ramp(30, 9), 4, "b"));
  ASSERT_TRUE(b.ok());
  const size_t first = model.batches.size();
  RunUntilIdle(*engine);
  // While b's 30-token prompt is computed, every step still carries a's next token.
  int prefill_steps = 0;
  for (size_t i = first; i < model.batches.size(); ++i) {
    const Batch& batch = model.batches[i];
    EXPECT_LE(batch.size(), 8);
    if (TokensOf(batch, batch.seq_ids.back()) > 1) {
      ++prefill_steps;
      EXPECT_EQ(batch.seq_ids.front(), model.batches[0].seq_ids[0]) << "step " << i << " lacks a's decode";
      if (prefill_steps < 5) EXPECT_EQ(batch.size(), 8);  // 1 decode + 7 prompt tokens
    }
  }
  EXPECT_EQ(prefill_steps, 5);  // ceil(30 / 7)
  std::vector<Outcome> oa, ob;
  Drain(**a, oa);
  Drain(**b, ob);
  EXPECT_EQ(oa[0].tokens, FakeModel::Greedy(Ramp(3, 5), 12));
  EXPECT_EQ(ob[0].tokens, FakeModel::Greedy(Ramp(30, 9), 4));
}

TEST(SchedulerTest, DecodesOfAllRunningSequencesShareOneStep) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 4; ++i) hs.push_back(*engine->Submit(Greedy(Ramp(3 + i, 10 * i), 5)));
  RunUntilIdle(*engine);
  // One step prefills all four prompts (18 tokens > budget 16: the last is chunked), then decodes together.
  ASSERT_GE(model.batches.size(), 2u);
  EXPECT_EQ(model.batches[0].size(), 16);
  for (int i = 0; i < 4; ++i) {
    std::vector<Outcome> out;
    Drain(*hs[i], out);
    EXPECT_EQ(out[0].tokens, FakeModel::Greedy(Ramp(3 + i, 10 * i), 5)) << i;
  }
  EXPECT_LE(model.batches.size(), 7u);
}

TEST(SchedulerTest, PreemptsByRecomputeWhenThePoolRunsOut) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.block_size = 4;
  o.kv_memory_bytes = 6 * PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, 4);  // 24 positions
  o.prefix_caching = false;
  auto engine = MakeEngine(model, o);
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 3; ++i) hs.push_back(*engine->Submit(Greedy(Ramp(6, 7 * i), 10)));  // 16 positions each
  RunUntilIdle(*engine);
  EXPECT_GT(engine->stats().preemptions_total, 0);
  for (int i = 0; i < 3; ++i) {
    std::vector<Outcome> out;
    Drain(*hs[i], out);
    ASSERT_TRUE(out[0].finished);
    EXPECT_EQ(out[0].final_event.finish, FinishReason::kLength) << out[0].final_event.error.ToString();
    EXPECT_EQ(out[0].tokens, FakeModel::Greedy(Ramp(6, 7 * i), 10)) << i;
    EXPECT_EQ(out[0].final_event.usage.tokens_completion, 10);
  }
  EXPECT_EQ(engine->kv_cache().usage(), 0.0);
}

TEST(SchedulerTest, PromptLogprobsAreReportedOnceAcrossPreemptions) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.kv_memory_bytes = 6 * PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, 4);  // 24 positions
  auto engine = MakeEngine(model, o);
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 3; ++i) {
    EngineRequest r = Greedy(Ramp(6, 7 * i), 10);
    r.prompt_logprobs = true;
    hs.push_back(*engine->Submit(r));
  }
  RunUntilIdle(*engine);
  EXPECT_GT(engine->stats().preemptions_total, 0);
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> positions, tokens;
    while (auto e = hs[i]->TryPop()) {
      if (e->prompt) {
        EXPECT_TRUE(tokens.empty()) << i;
        positions.push_back(e->prompt_position);
      } else if (e->has_token()) {
        tokens.push_back(e->token);
      }
    }
    EXPECT_EQ(positions, (std::vector<int32_t>{1, 2, 3, 4, 5})) << i;
    EXPECT_EQ(tokens, FakeModel::Greedy(Ramp(6, 7 * i), 10)) << i;
  }
  EXPECT_EQ(engine->kv_cache().usage(), 0.0);
}

TEST(SchedulerTest, ResumesFromCachedPrefixBlocksAfterPreemption) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.kv_memory_bytes = 6 * PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, 4);
  auto engine = MakeEngine(model, o);
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 3; ++i) hs.push_back(*engine->Submit(Greedy(Ramp(6, 7 * i), 10)));
  RunUntilIdle(*engine);
  EXPECT_GT(engine->stats().preemptions_total, 0);
  for (int i = 0; i < 3; ++i) {
    std::vector<Outcome> out;
    Drain(*hs[i], out);
    EXPECT_EQ(out[0].tokens, FakeModel::Greedy(Ramp(6, 7 * i), 10)) << i;
  }
}

TEST(SchedulerTest, FailsASequenceThePoolCannotHoldAlone) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.kv_memory_bytes = 2 * PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, 4);  // 8 positions
  auto engine = MakeEngine(model, o);
  auto h = engine->Submit(Greedy(Ramp(6), 10));
  ASSERT_TRUE(h.ok());
  RunUntilIdle(*engine);
  std::vector<Outcome> out;
  Drain(**h, out);
  ASSERT_TRUE(out[0].finished);
  EXPECT_EQ(out[0].final_event.finish, FinishReason::kError);
  EXPECT_EQ(out[0].final_event.error.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(out[0].tokens.size(), 3u);  // positions 0-7 fill both blocks; feeding the 9th token fails
  EXPECT_EQ(engine->kv_cache().usage(), 0.0);
}

TEST(SchedulerTest, RepeatedPromptAdoptsCachedBlocks) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  auto first = engine->Submit(Greedy(Ramp(18), 2));
  RunUntilIdle(*engine);
  auto second = engine->Submit(Greedy(Ramp(18), 2));
  const size_t before = model.batches.size();
  RunUntilIdle(*engine);
  std::vector<Outcome> o1, o2;
  Drain(**first, o1);
  Drain(**second, o2);
  EXPECT_EQ(o1[0].final_event.usage.tokens_cached, 0);
  EXPECT_EQ(o2[0].final_event.usage.tokens_cached, 16);  // (18 - 1) rounded down to blocks of 4
  EXPECT_EQ(model.batches[before].size(), 2);            // only positions 16 and 17 computed
  EXPECT_EQ(o2[0].tokens, o1[0].tokens);
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.prefix_cache_queries, 36);
  EXPECT_EQ(s.prefix_cache_hits, 16);
}

TEST(SchedulerTest, SiblingsOfNShareThePromptBlocks) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  EngineRequest r = Greedy(Ramp(13), 4);
  r.n = 3;
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 42;
  auto h = engine->Submit(r);
  ASSERT_TRUE(h.ok());
  RunUntilIdle(*engine);
  std::vector<Outcome> out;
  Drain(**h, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].final_event.usage.tokens_cached, 0);
  EXPECT_EQ(out[1].final_event.usage.tokens_cached, 12);
  EXPECT_EQ(out[2].final_event.usage.tokens_cached, 12);
  // Sequence i samples with seed + i: a lone request with seed 43 repeats sequence 1.
  EngineRequest lone = r;
  lone.n = 1;
  lone.sampling.seed = 43;
  auto h2 = engine->Submit(lone);
  RunUntilIdle(*engine);
  std::vector<Outcome> out2;
  Drain(**h2, out2);
  EXPECT_EQ(out2[0].tokens, out[1].tokens);
}

}  // namespace
}  // namespace pagoda::testing
