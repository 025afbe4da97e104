// Workload classes in the scheduler (EngineRequest::workload_class): the
// policies' class order, then through an Engine over FakeModel driven by
// Step() (every figure in engine steps): lower classes paused while a higher
// prompt is pending, preemption of lower classes for slots and for blocks,
// the resume from cached prefix blocks, and EngineOptions::realtime_reserve.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "engine/engine_test_util.h"

namespace pagoda::testing {
namespace {

constexpr WorkloadClass kBatch = WorkloadClass::kBatch;
constexpr WorkloadClass kInteractive = WorkloadClass::kInteractive;
constexpr WorkloadClass kRealtime = WorkloadClass::kRealtime;

std::unique_ptr<Sequence> Seq(const std::string& tenant, WorkloadClass c, int32_t priority, uint64_t arrival) {
  auto s = std::make_unique<Sequence>();
  s->group = std::make_shared<RequestGroup>();
  s->group->request.tenant = tenant;
  s->group->request.workload_class = c;
  s->group->request.priority = priority;
  s->arrival = arrival;
  s->n_prompt = 4;
  s->tokens.assign(4, 1);
  return s;
}

EngineRequest Req(std::vector<int32_t> prompt, int max_tokens, const std::string& id, WorkloadClass c) {
  EngineRequest r = Greedy(std::move(prompt), max_tokens, id);
  r.workload_class = c;
  r.ignore_eog = true;
  return r;
}

const Sequence* Find(const std::vector<std::unique_ptr<Sequence>>& list, const std::string& id) {
  for (const auto& s : list) {
    if (s->request().id == id) return s.get();
  }
  return nullptr;
}

// The KV slot of running request `id`; -1 when it is not running.
int32_t SlotOf(const Engine& e, const std::string& id) {
  const Sequence* s = Find(e.scheduler().running(), id);
  return s ? s->slot : -1;
}

int64_t TokensOf(const Batch& b, int32_t seq) {
  if (seq < 0) return 0;
  int64_t n = 0;
  for (int32_t s : b.seq_ids) n += s == seq;
  return n;
}

std::vector<int32_t> PositionsOf(const Batch& b, int32_t seq) {
  std::vector<int32_t> p;
  for (int64_t i = 0; i < b.size(); ++i) {
    if (b.seq_ids[i] == seq) p.push_back(b.positions[i]);
  }
  return p;
}

void ExpectGreedy(RequestChannel& h, const std::vector<int32_t>& prompt, int max_tokens, const std::string& what) {
  std::vector<Outcome> out;
  Drain(h, out);
  ASSERT_EQ(out.size(), 1u) << what;
  ASSERT_TRUE(out[0].finished) << what;
  EXPECT_EQ(out[0].final_event.finish, FinishReason::kLength) << what << ": " << out[0].final_event.error.ToString();
  EXPECT_EQ(out[0].tokens, FakeModel::Greedy(prompt, max_tokens)) << what;
}

// ---- the policies alone --------------------------------------------------------

TEST(WorkloadClassTest, FcfsAdmitsTheHigherClassFirstThenByArrival) {
  FcfsPolicy p;
  auto b = Seq("", kBatch, 5, 0), i1 = Seq("", kInteractive, 0, 1), r = Seq("", kRealtime, 0, 2),
       i2 = Seq("", kInteractive, 0, 3);
  std::vector<Sequence*> w = {b.get(), i1.get(), r.get(), i2.get()};
  std::stable_sort(w.begin(), w.end(), [&](auto* x, auto* y) { return p.AdmitBefore(*x, *y); });
  EXPECT_EQ(w, (std::vector<Sequence*>{r.get(), i1.get(), i2.get(), b.get()}));
  // Victim: the lowest class, whatever its priority and arrival; then as before.
  std::vector<const Sequence*> running = {r.get(), b.get(), i1.get(), i2.get()};
  EXPECT_EQ(p.PickVictim(running), 1u);
  running = {i1.get(), r.get(), i2.get()};
  EXPECT_EQ(p.PickVictim(running), 2u);  // the latest interactive
}

TEST(WorkloadClassTest, FairShareAdmitsTheHigherClassFirstThenAsBefore) {
  FairSharePolicy p;
  // a's batch request is provisioned (priority 1) and first; b's interactive
  // ones come later; c's realtime one last.
  auto a = Seq("a", kBatch, 1, 0), b1 = Seq("b", kInteractive, 0, 1), b2 = Seq("b", kInteractive, 0, 2),
       c = Seq("c", kRealtime, 0, 3), a2 = Seq("a", kInteractive, 0, 4);
  std::vector<Sequence*> w = {a.get(), b1.get(), b2.get(), c.get(), a2.get()};
  for (Sequence* s : w) p.OnWaiting(*s);
  std::stable_sort(w.begin(), w.end(), [&](auto* x, auto* y) { return p.AdmitBefore(*x, *y); });
  p.BeginAdmission(w);
  std::vector<uint64_t> got;
  for (size_t i; (i = p.NextCandidate()) != SchedulerPolicy::kNone;) {
    got.push_back(w[i]->arrival);
    p.Admitted(i);
  }
  // Realtime, then interactive shared between a and b (a's head is now its
  // interactive request, ahead of its batch one despite the priority), batch last.
  EXPECT_EQ(got, (std::vector<uint64_t>{3, 1, 4, 2, 0}));
  std::vector<const Sequence*> running = {c.get(), a.get(), b1.get()};
  EXPECT_EQ(p.PickVictim(running), 1u);  // batch, despite its priority
  running = {c.get(), b1.get(), b2.get()};
  EXPECT_EQ(p.PickVictim(running), 2u);
}

// ---- through the engine (FakeModel) --------------------------------------------

TEST(WorkloadClassTest, BothPoliciesAdmitTheHigherClassFirst) {
  for (SchedulingMode mode : {SchedulingMode::kFcfs, SchedulingMode::kFair}) {
    FakeModel model;
    EngineOptions o = FakeOptions();
    o.scheduling = mode;
    o.max_running = 1;
    auto engine = MakeEngine(model, o);
    const std::vector<std::pair<std::string, WorkloadClass>> reqs = {
        {"batch", kBatch}, {"interactive", kInteractive}, {"realtime", kRealtime}, {"interactive2", kInteractive}};
    for (size_t i = 0; i < reqs.size(); ++i) {
      EngineRequest r = Req(Ramp(4, 10 * static_cast<int32_t>(i)), 2, reqs[i].first, reqs[i].second);
      r.tenant = i % 2 ? "x" : "y";
      r.priority = reqs[i].second == kBatch ? 1 : 0;  // the class outranks the priority
      ASSERT_TRUE(engine->Submit(r).ok());
    }
    std::vector<std::string> order;
    while (engine->Step()) {
      for (const auto& s : engine->scheduler().running()) {
        if (std::find(order.begin(), order.end(), s->request().id) == order.end()) order.push_back(s->request().id);
      }
    }
    EXPECT_EQ(order, (std::vector<std::string>{"realtime", "interactive", "interactive2", "batch"}))
        << SchedulingModeName(mode);
  }
}

TEST(WorkloadClassTest, LowerClassesPauseWhileAHigherPromptIsPending) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());  // budget 16
  const auto pb = Ramp(6, 1), pr = Ramp(48, 10), pi = Ramp(32, 30);
  auto hb = engine->Submit(Req(pb, 30, "b", kBatch));
  ASSERT_TRUE(engine->Step());
  ASSERT_TRUE(engine->Step());  // b decoding
  const int32_t b = SlotOf(*engine, "b");
  ASSERT_GE(b, 0);

  // A realtime prompt of 48 tokens takes every step's whole budget: its first
  // token comes after 3 steps, as on an idle server (4 if b's decode took a token).
  auto hr = engine->Submit(Req(pr, 12, "r", kRealtime));
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(engine->Step());
    const Batch& batch = model.batches.back();
    EXPECT_EQ(TokensOf(batch, b), 0) << "step " << step;
    EXPECT_EQ(batch.size(), 16) << "step " << step;
  }
  std::vector<Outcome> out;
  Drain(**hr, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tokens.size(), 1u);  // r's first token, after its 3 prompt steps
  const int32_t r = SlotOf(*engine, "r");
  ASSERT_TRUE(engine->Step());
  EXPECT_EQ(TokensOf(model.batches.back(), b), 1);  // b resumes, decoding beside r
  EXPECT_EQ(TokensOf(model.batches.back(), r), 1);

  // An interactive prompt pauses b but not r: higher decodes still go first.
  auto hi = engine->Submit(Req(pi, 3, "i", kInteractive));
  for (int step = 0; step < 3; ++step) {  // 15 + 15 + 2 prompt tokens beside r's decode
    ASSERT_TRUE(engine->Step());
    const Batch& batch = model.batches.back();
    EXPECT_EQ(TokensOf(batch, b), 0) << "step " << step;
    EXPECT_EQ(TokensOf(batch, r), 1) << "step " << step;
    EXPECT_EQ(TokensOf(batch, SlotOf(*engine, "i")), step < 2 ? 15 : 2) << "step " << step;
  }
  ASSERT_TRUE(engine->Step());
  EXPECT_EQ(TokensOf(model.batches.back(), b), 1);
  RunUntilIdle(*engine);
  EXPECT_EQ(engine->stats().preemptions_class_total, 0);
  ExpectGreedy(**hb, pb, 30, "b");
  out.clear();
  Drain(**hr, out);
  std::vector<int32_t> expect_r = FakeModel::Greedy(pr, 12);
  EXPECT_EQ(out[0].tokens, std::vector<int32_t>(expect_r.begin() + 1, expect_r.end()));
  ExpectGreedy(**hi, pi, 3, "i");
}

TEST(WorkloadClassTest, ARealtimeArrivalInterruptsAStepOfOnlyLowerClassWork) {
  FakeModel model;
  auto engine = MakeEngine(model, FakeOptions());
  const auto p1 = Ramp(6, 1), p2 = Ramp(7, 20), pr = Ramp(5, 40);
  auto h1 = engine->Submit(Req(p1, 20, "b1", kBatch));
  auto h2 = engine->Submit(Req(p2, 20, "b2", kBatch));
  ASSERT_TRUE(engine->Step());
  ASSERT_TRUE(engine->Step());  // both decoding
  // A realtime request arrives while the next (batch-only) step runs.
  std::shared_ptr<RequestChannel> hr;
  model.before_forward = [&] { hr = std::move(engine->Submit(Req(pr, 4, "r", kRealtime))).value(); };
  const size_t before = model.batches.size();
  ASSERT_TRUE(engine->Step());
  EXPECT_EQ(model.interrupted_forwards, 1);
  EXPECT_EQ(engine->stats().steps_interrupted_total, 1);
  // The next step is the realtime prompt alone (the batch paused, KV kept).
  ASSERT_TRUE(engine->Step());
  ASSERT_EQ(model.batches.size(), before + 2);
  const Batch& next = model.batches.back();
  EXPECT_EQ(next.size(), 5);
  EXPECT_EQ(TokensOf(next, SlotOf(*engine, "b1")), 0);
  // An interactive or batch arrival does not interrupt; a step holding
  // realtime work is never interrupted.
  model.before_forward = [&] { (void)engine->Submit(Req(Ramp(3, 50), 2, "i", kInteractive)); };
  ASSERT_TRUE(engine->Step());
  RunUntilIdle(*engine);
  EXPECT_EQ(model.interrupted_forwards, 1);
  // Half-written K/V of the abandoned step is recomputed: every answer is exact.
  ExpectGreedy(**h1, p1, 20, "b1");
  ExpectGreedy(**h2, p2, 20, "b2");
  ExpectGreedy(*hr, pr, 4, "r");
}

TEST(WorkloadClassTest, PreemptsTheLatestLowerClassSequenceForASlot) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.max_running = 2;
  auto engine = MakeEngine(model, o);
  const auto p1 = Ramp(6, 1), p2 = Ramp(6, 20), pr = Ramp(6, 40);
  auto h1 = engine->Submit(Req(p1, 20, "b1", kBatch));
  auto h2 = engine->Submit(Req(p2, 20, "b2", kBatch));
  ASSERT_TRUE(engine->Step());
  ASSERT_TRUE(engine->Step());
  ASSERT_EQ(engine->scheduler().running().size(), 2u);
  const int32_t b1 = SlotOf(*engine, "b1");

  auto hr = engine->Submit(Req(pr, 4, "r", kRealtime));
  ASSERT_TRUE(engine->Step());
  EXPECT_EQ(engine->stats().preemptions_class_total, 1);
  EXPECT_EQ(engine->stats().preemptions_total, 0);
  EXPECT_NE(SlotOf(*engine, "r"), -1);
  EXPECT_EQ(SlotOf(*engine, "b1"), b1);
  EXPECT_NE(Find(engine->scheduler().waiting(), "b2"), nullptr);  // the latest arrival
  EXPECT_EQ(TokensOf(model.batches.back(), b1), 0);               // paused during r's prompt
  EXPECT_EQ(model.batches.back().size(), 6);
  RunUntilIdle(*engine);
  EXPECT_EQ(engine->stats().preemptions_class_total, 1);
  ExpectGreedy(**h1, p1, 20, "b1");
  ExpectGreedy(**h2, p2, 20, "b2");
  ExpectGreedy(**hr, pr, 4, "r");
}

TEST(WorkloadClassTest, PreemptsALowerClassForBlocksAndItResumesFromCachedBlocks) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.max_batch_tokens = 32;
  o.kv_memory_bytes = 13 * PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, 4);  // 52 positions
  auto engine = MakeEngine(model, o);
  const auto pr = Ramp(9, 1), pa = Ramp(14, 30), pb = Ramp(14, 50), pi = Ramp(11, 5);
  auto hr = engine->Submit(Req(pr, 4, "r", kRealtime));  // 3 blocks, never grows
  auto ha = engine->Submit(Req(pa, 8, "a", kBatch));     // 4 blocks
  auto hb = engine->Submit(Req(pb, 8, "b", kBatch));     // 4 blocks
  ASSERT_TRUE(engine->Step());  // r's prompt alone: the batch ones wait for it
  EXPECT_EQ(engine->scheduler().running().size(), 1u);
  ASSERT_TRUE(engine->Step());  // r decodes; a and b computed whole
  ASSERT_EQ(engine->scheduler().running().size(), 3u);
  EXPECT_EQ(engine->kv_cache().pool().n_available(), 2);

  // i needs 3 blocks, 2 are left: preempting b (the latest batch) makes room;
  // r, of a higher class, is not touched.
  auto hi = engine->Submit(Req(pi, 2, "i", kInteractive));
  ASSERT_TRUE(engine->Step());
  EXPECT_EQ(engine->stats().preemptions_class_total, 1);
  EXPECT_EQ(engine->stats().preemptions_total, 0);
  EXPECT_NE(Find(engine->scheduler().waiting(), "b"), nullptr);
  const Batch& step2 = model.batches.back();
  EXPECT_EQ(TokensOf(step2, SlotOf(*engine, "a")), 0);  // paused, keeps its blocks
  EXPECT_EQ(TokensOf(step2, SlotOf(*engine, "r")), 1);
  EXPECT_EQ(TokensOf(step2, SlotOf(*engine, "i")), 11);

  // b waits (4 blocks needed, 3 left) until r and i finish, then adopts the
  // 3 full blocks it had committed: only positions 12-14 are computed again.
  ASSERT_TRUE(engine->Step());
  EXPECT_NE(Find(engine->scheduler().waiting(), "b"), nullptr);
  const int64_t hits = engine->stats().prefix_cache_hits;
  ASSERT_TRUE(engine->Step());
  const int32_t b = SlotOf(*engine, "b");
  ASSERT_GE(b, 0);
  EXPECT_EQ(PositionsOf(model.batches.back(), b), (std::vector<int32_t>{12, 13, 14}));
  EXPECT_EQ(engine->stats().prefix_cache_hits - hits, 12);
  RunUntilIdle(*engine);
  EXPECT_EQ(engine->stats().preemptions_class_total, 1);
  EXPECT_EQ(engine->stats().preemptions_total, 0);
  ExpectGreedy(**hr, pr, 4, "r");
  ExpectGreedy(**ha, pa, 8, "a");
  ExpectGreedy(**hi, pi, 2, "i");
  std::vector<Outcome> out;
  Drain(**hb, out);
  EXPECT_EQ(out[0].tokens, FakeModel::Greedy(pb, 8));
  EXPECT_EQ(out[0].final_event.usage.tokens_cached, 0);  // usage counts the first admission only
}

TEST(WorkloadClassTest, DoesNotPreemptWhenEvenAllLowerClassesWouldNotMakeRoom) {
  FakeModel model;
  EngineOptions o = FakeOptions();
  o.max_batch_tokens = 32;
  o.kv_memory_bytes = 10 * PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, 4);
  auto engine = MakeEngine(model, o);
  const auto pr = Ramp(29, 1), pa = Ramp(6, 40), pi = Ramp(20, 10);
  auto hr = engine->Submit(Req(pr, 3, "r", kRealtime));  // 8 blocks
  auto ha = engine->Submit(Req(pa, 8, "a", kBatch));     // 2 blocks
  ASSERT_TRUE(engine->Step());
  ASSERT_TRUE(engine->Step());
  ASSERT_EQ(engine->scheduler().running().size(), 2u);
  ASSERT_EQ(engine->kv_cache().pool().n_available(), 0);
  // i needs 5 blocks; a's 2 would not do: a stays (paused), i waits for r.
  auto hi = engine->Submit(Req(pi, 2, "i", kInteractive));
  ASSERT_TRUE(engine->Step());
  EXPECT_EQ(engine->stats().preemptions_class_total, 0);
  EXPECT_NE(SlotOf(*engine, "a"), -1);
  EXPECT_EQ(TokensOf(model.batches.back(), SlotOf(*engine, "a")), 0);
  EXPECT_NE(Find(engine->scheduler().waiting(), "i"), nullptr);
  ASSERT_TRUE(engine->Step());  // r finished last step: i starts, a still paused
  EXPECT_NE(SlotOf(*engine, "i"), -1);
  EXPECT_EQ(TokensOf(model.batches.back(), SlotOf(*engine, "a")), 0);
  ASSERT_TRUE(engine->Step());
  EXPECT_EQ(TokensOf(model.batches.back(), SlotOf(*engine, "a")), 1);
  RunUntilIdle(*engine);
  EXPECT_EQ(engine->stats().preemptions_class_total, 0);
  EXPECT_EQ(engine->stats().preemptions_total, 0);
  ExpectGreedy(**hr, pr, 3, "r");
  ExpectGreedy(**ha, pa, 8, "a");
  ExpectGreedy(**hi, pi, 2, "i");
}

TEST(WorkloadClassTest, RealtimeReserveKeepsSlotsForRealtime) {
  FakeModel model;
  EngineOptions o = FakeOptions();  // 4 slots
  o.max_batch_tokens = 64;
  o.realtime_reserve = 1;
  auto engine = MakeEngine(model, o);
  std::vector<RequestHandle> hs;
  for (int i = 0; i < 4; ++i) hs.push_back(*engine->Submit(Req(Ramp(6, 10 * i), 6, "b" + std::to_string(i), kBatch)));
  ASSERT_TRUE(engine->Step());
  ASSERT_TRUE(engine->Step());
  EXPECT_EQ(engine->scheduler().running().size(), 3u);  // a slot is free, but reserved
  EXPECT_NE(Find(engine->scheduler().waiting(), "b3"), nullptr);
  EngineStats st = engine->stats();
  EXPECT_EQ(st.requests_running_by_class[static_cast<size_t>(kBatch)], 3);
  EXPECT_EQ(st.requests_waiting_by_class[static_cast<size_t>(kBatch)], 1);
  EXPECT_EQ(st.requests_running_by_class[static_cast<size_t>(kRealtime)], 0);

  auto hr = engine->Submit(Req(Ramp(6, 50), 3, "r", kRealtime));
  ASSERT_TRUE(engine->Step());
  EXPECT_NE(SlotOf(*engine, "r"), -1);  // straight into the reserved slot
  EXPECT_EQ(engine->scheduler().running().size(), 4u);
  st = engine->stats();
  EXPECT_EQ(st.preemptions_class_total, 0);
  EXPECT_EQ(st.requests_running_by_class[static_cast<size_t>(kRealtime)], 1);
  RunUntilIdle(*engine);
  for (int i = 0; i < 4; ++i) ExpectGreedy(*hs[i], Ramp(6, 10 * i), 6, "b" + std::to_string(i));
  ExpectGreedy(**hr, Ramp(6, 50), 3, "r");
}

TEST(WorkloadClassTest, RealtimeReserveKeepsBlocksForRealtime) {
  FakeModel model;
  EngineOptions o = FakeOptions();  // 4 slots
  o.max_batch_tokens = 64;
  o.realtime_reserve = 1;
  o.kv_memory_bytes = 16 * PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, 4);
  auto engine = MakeEngine(model, o);
  EXPECT_EQ(engine->scheduler().realtime_reserve_blocks(), 4);  // 1 x 16 / 4
  const auto pa = Ramp(40, 1), pb = Ramp(12, 45), pr = Ramp(19, 20);
  auto ha = engine->Submit(Req(pa, 4, "a", kBatch));  // 10 blocks
  auto hb = engine->Submit(Req(pb, 4, "b", kBatch));  // 3 blocks: would leave 3 of the 4 reserved
  ASSERT_TRUE(engine->Step());
  ASSERT_TRUE(engine->Step());
  EXPECT_NE(Find(engine->scheduler().waiting(), "b"), nullptr);
  EXPECT_EQ(engine->kv_cache().pool().n_available(), 5);
  auto hr = engine->Submit(Req(pr, 2, "r", kRealtime));  // 5 blocks: takes the reserve
  ASSERT_TRUE(engine->Step());
  EXPECT_NE(SlotOf(*engine, "r"), -1);
  EXPECT_EQ(engine->stats().preemptions_class_total, 0);
  EXPECT_EQ(engine->kv_cache().pool().n_available(), 0);
  RunUntilIdle(*engine);
  EXPECT_EQ(engine->stats().preemptions_total, 0);
  ExpectGreedy(**ha, pa, 4, "a");
  ExpectGreedy(**hb, pb, 4, "b");
  ExpectGreedy(**hr, pr, 2, "r");
}

TEST(WorkloadClassTest, CreateRefusesAReserveOutsideTheSlots) {
  FakeModel model;
  EngineOptions o = FakeOptions();  // 4 slots
  for (int32_t reserve : {-1, 4, 5}) {
    o.realtime_reserve = reserve;
    auto e = Engine::Create(model, o);
    ASSERT_FALSE(e.ok()) << reserve;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find("realtime_reserve"), std::string::npos) << e.status().ToString();
  }
  o.realtime_reserve = 3;
  EXPECT_TRUE(Engine::Create(model, o).ok());
}

}  // namespace
}  // namespace pagoda::testing
