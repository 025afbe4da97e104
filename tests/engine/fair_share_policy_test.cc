// The fair-share (VTC) scheduling policy: its victim and admission order
// and its bounded state (idle tenants at or below the floor forgotten)
// directly, then through an Engine over FakeModel driven by Step() (every
// figure in engine steps, so deterministic: forgetting changes no decision,
// a priority that follows a reservation delivers it), then on the real
// stories260K model: a noisy neighbour and a provisioned tenant.
#include "engine/fair_share_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "engine/engine_test_util.h"
#include "engine/trace_runner.h"
#include "support/loaded_model.h"
#include "support/test_paths.h"

namespace pagoda::testing {
namespace {

std::unique_ptr<Sequence> Seq(const std::string& tenant, int32_t priority, uint64_t arrival, int32_t n_prompt = 4,
                              double weight = 1) {
  auto s = std::make_unique<Sequence>();
  s->group = std::make_shared<RequestGroup>();
  s->group->request.tenant = tenant;
  s->group->request.priority = priority;
  s->group->request.weight = weight;
  s->arrival = arrival;
  s->n_prompt = n_prompt;
  s->tokens.assign(static_cast<size_t>(n_prompt), 1);
  return s;
}

EngineOptions FairOptions() {
  EngineOptions o = FakeOptions();
  o.scheduling = SchedulingMode::kFair;
  o.max_waiting = 1000;
  return o;
}

Arrival Req(int step, std::string tenant, int prompt_len = 4, int max_tokens = 4, int32_t first = 1) {
  Arrival a;
  a.step = step;
  a.tenant = std::move(tenant);
  a.prompt = Ramp(prompt_len, first);
  a.max_tokens = max_tokens;
  return a;
}

std::vector<size_t> PositionsOf(const TraceResult& r, const std::vector<Arrival>& trace, const std::string& tenant) {
  std::vector<size_t> pos;
  for (size_t k = 0; k < r.admission_order.size(); ++k) {
    if (trace[r.admission_order[k]].tenant == tenant) pos.push_back(k);
  }
  return pos;
}

// ---- the policy alone ---------------------------------------------------------

TEST(FairSharePolicyTest, VictimIsLowestPriorityThenLargestCounterThenLatest) {
  FairSharePolicy p;
  auto a1 = Seq("a", 0, 1), a2 = Seq("a", 0, 5), b1 = Seq("b", 0, 2), hi = Seq("c", 1, 9);
  for (Sequence* s : {a1.get(), a2.get(), b1.get(), hi.get()}) p.OnWaiting(*s);
  std::vector<Sequence*> all = {a1.get(), a2.get(), b1.get(), hi.get()};
  p.BeginAdmission(all);
  for (size_t i = 0; i < all.size(); ++i) p.Admitted(i);  // every prompt charged 4 / weight
  for (int i = 0; i < 3; ++i) p.OnSampled(*b1);           // b: 4 + 6 = 10 > a: 8
  EXPECT_GT(p.counter("b"), p.counter("a"));
  std::vector<const Sequence*> running = {hi.get(), a1.get(), b1.get(), a2.get()};
  EXPECT_EQ(p.PickVictim(running), 2u);  // b, the largest counter, over a's later arrival
  running = {hi.get(), a1.get(), a2.get()};
  EXPECT_EQ(p.PickVictim(running), 2u);  // within a tenant: the latest arrival
  running = {hi.get(), b1.get()};
  EXPECT_EQ(p.PickVictim(running), 1u);  // priority first, whatever the counters
  for (int i = 0; i < 100; ++i) p.OnSampled(*hi);
  EXPECT_EQ(p.PickVictim(running), 1u);
}

TEST(FairSharePolicyTest, ShareVictimIsAnOverShareTenantsLatestForAnUnderShareOne) {
  FairSharePolicy p;
  // a holds all four slots; b then waits, lifted to a's counter.
  std::vector<std::unique_ptr<Sequence>> a;
  std::vector<Sequence*> admitted;
  for (int i = 0; i < 4; ++i) {
    a.push_back(Seq("a", 0, static_cast<uint64_t>(i)));
    p.OnWaiting(*a.back());
    admitted.push_back(a.back().get());
  }
  p.BeginAdmission(admitted);
  for (size_t i = 0; i < admitted.size(); ++i) p.Admitted(i);
  std::vector<const Sequence*> running(admitted.begin(), admitted.end());
  auto b = Seq("b", 0, 10);
  p.OnWaiting(*b);
  EXPECT_EQ(p.counter("b"), p.counter("a"));  // lifted: 16
  std::vector<const Sequence*> waiting = {b.get()};
  // Two tenants, four slots: a share of 2. a runs 4: its latest arrival goes.
  EXPECT_EQ(p.ShareVictim(waiting, running, 4), 3u);
  // With eight slots the share is 4: a is not over it.
  EXPECT_EQ(p.ShareVictim(waiting, running, 8), SchedulerPolicy::kNone);
  // A tenant that got less service than b is not preempted for it.
  auto c = Seq("c", 0, 11);
  p.OnWaiting(*c);
  std::vector<Sequence*> cw = {c.get()};
  p.BeginAdmission(cw);
  p.Admitted(0);  // c runs one, counter 16 + 4
  std::vector<const Sequence*> a_and_c(running.begin(), running.end());
  a_and_c.push_back(c.get());
  EXPECT_EQ(p.ShareVictim(waiting, a_and_c, 5), 3u);  // share 5/3 = 1: a's latest, never c
  // Another band is never preempted for fair share.
  auto hi = Seq("h", 1, 12);
  p.OnWaiting(*hi);
  std::vector<const Sequence*> only_hi = {hi.get()};
  EXPECT_EQ(p.ShareVictim(only_hi, running, 4), SchedulerPolicy::kNone);
  // One tenant alone: nobody to preempt for.
  FairSharePolicy q;
  auto x = Seq("x", 0, 0), y = Seq("x", 0, 1);
  q.OnWaiting(*x);
  q.OnWaiting(*y);
  std::vector<Sequence*> xw = {x.get()};
  q.BeginAdmission(xw);
  q.Admitted(0);
  std::vector<const Sequence*> xr = {x.get()}, yw = {y.get()};
  EXPECT_EQ(q.ShareVictim(yw, xr, 1), SchedulerPolicy::kNone);
  // Switched off: never.
  FairShareOptions off;
  off.preempt_for_share = false;
  FairSharePolicy r(off);
  for (auto& s : a) r.OnWaiting(*s);
  r.BeginAdmission(admitted);
  for (size_t i = 0; i < admitted.size(); ++i) r.Admitted(i);
  r.OnWaiting(*b);
  EXPECT_EQ(r.ShareVictim(waiting, running, 4), SchedulerPolicy::kNone);
}

TEST(FairSharePolicyTest, AdmitsTheSmallestCounterHeadWithinThePriorityBand) {
  FairSharePolicy p;
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 6; ++i) seqs.push_back(Seq("a", 0, i));  // a floods first
  seqs.push_back(Seq("b", 0, 6));
  seqs.push_back(Seq("c", 0, 7));
  seqs.push_back(Seq("p", 1, 8));  // provisioned, last to arrive
  std::vector<Sequence*> waiting;
  for (auto& s : seqs) {
    p.OnWaiting(*s);
    waiting.push_back(s.get());
  }
  std::stable_sort(waiting.begin(), waiting.end(), [&](auto* x, auto* y) { return p.AdmitBefore(*x, *y); });
  p.BeginAdmission(waiting);
  std::vector<std::string> got;
  for (size_t i; (i = p.NextCandidate()) != SchedulerPolicy::kNone;) {
    got.push_back(waiting[i]->request().tenant);
    p.Admitted(i);
  }
  // p's band first; then all counters 0: the earliest head (a), then b and c
  // (counter 0 < a's 4), then a again, each admission lifting its tenant's counter.
  EXPECT_EQ(got, (std::vector<std::string>{"p", "a", "b", "c", "a", "a", "a", "a", "a"}));
}

TEST(FairSharePolicyTest, ANewlyBackloggedTenantStartsAtTheSmallestBackloggedCounter) {
  FairSharePolicy p;
  auto a1 = Seq("a", 0, 0, 100), a2 = Seq("a", 0, 1, 100);
  p.OnWaiting(*a1);
  p.OnWaiting(*a2);
  std::vector<Sequence*> w = {a1.get(), a2.get()};
  p.BeginAdmission(w);
  p.Admitted(0);  // a: 100, still backlogged (a2)
  auto b = Seq("b", 0, 2);
  p.OnWaiting(*b);
  EXPECT_EQ(p.counter("b"), 100);  // no credit for having been idle
  // With nobody backlogged, the last tenant to leave the backlog sets the floor.
  std::vector<Sequence*> w2 = {a2.get(), b.get()};
  p.BeginAdmission(w2);
  p.Admitted(0);  // a: 200
  p.Admitted(1);  // b: 104, b leaves last
  for (int i = 0; i < 50; ++i) p.OnSampled(*b);  // b: 204
  auto c = Seq("c", 0, 3);
  p.OnWaiting(*c);
  EXPECT_EQ(p.counter("c"), 204);
  // A weight divides every charge.
  auto d = Seq("d", 0, 4, 8, /*weight=*/4);
  p.OnWaiting(*d);
  std::vector<Sequence*> w3 = {d.get()};
  p.BeginAdmission(w3);
  const double before = p.counter("d");
  p.Admitted(0);
  p.OnSampled(*d);
  EXPECT_DOUBLE_EQ(p.counter("d") - before, (8 * 1.0 + 2.0) / 4);
}

TEST(FairSharePolicyTest, AnIdleTenantAtOrBelowTheFloorIsForgottenAndReturnsAtTheFloor) {
  FairSharePolicy p;
  auto a1 = Seq("a", 0, 0, 100), a2 = Seq("a", 0, 1, 100), b1 = Seq("b", 0, 2, 4);
  for (Sequence* s : {a1.get(), a2.get(), b1.get()}) p.OnWaiting(*s);
  std::vector<Sequence*> w = {a1.get(), b1.get(), a2.get()};
  p.BeginAdmission(w);
  p.Admitted(0);  // a: 100, still backlogged (a2)
  p.Admitted(1);  // b: 4
  EXPECT_EQ(p.tracked_tenants(), 2u);
  p.OnLeave(*b1, false);  // b idle at 4 <= a's 100: forgotten
  EXPECT_EQ(p.tracked_tenants(), 1u);
  EXPECT_EQ(p.counter("b"), 0);
  auto b2 = Seq("b", 0, 3);
  p.OnWaiting(*b2);
  EXPECT_EQ(p.counter("b"), 100);  // what it would have been lifted to anyway
  // Above the floor an idle tenant is kept: its extra use still counts.
  std::vector<Sequence*> w2 = {b2.get()};
  p.BeginAdmission(w2);
  p.Admitted(0);  // b: 104
  for (int i = 0; i < 10; ++i) p.OnSampled(*b2);  // b: 124 > a's 100
  p.OnLeave(*b2, false);
  EXPECT_EQ(p.tracked_tenants(), 2u);
  EXPECT_EQ(p.counter("b"), 124);
  // With nobody backlogged the last tenant to leave the backlog sets the
  // floor, even after it is forgotten itself.
  std::vector<Sequence*> w3 = {a2.get()};
  p.BeginAdmission(w3);
  p.Admitted(0);  // a: 200, the last to leave the backlog
  p.OnLeave(*a1, false);
  p.OnLeave(*a2, false);  // a idle at the floor (its own counter): forgotten
  EXPECT_EQ(p.counter("a"), 0);
  auto c = Seq("c", 0, 4);
  p.OnWaiting(*c);
  EXPECT_EQ(p.counter("c"), 200);
  EXPECT_EQ(p.tracked_tenants(), 2u);  // c, and b: idle at 124, now below the floor, until the next sweep
}

TEST(FairSharePolicyTest, TheTenantTableStaysBoundedOverManyDistinctTenants) {
  // A flooding tenant always backlogged, and 20,000 tenants that each come
  // once, run one request and leave: without forgetting the table would
  // hold every one of them.
  FairSharePolicy p;
  std::vector<std::unique_ptr<Sequence>> flood;
  uint64_t arrival = 0;
  auto add_flood = [&] {
    flood.push_back(Seq("flood", 0, arrival++, 8));
    p.OnWaiting(*flood.back());
  };
  for (int i = 0; i < 4; ++i) add_flood();
  size_t most = 0;
  for (int i = 0; i < 20000; ++i) {
    auto s = Seq("once-" + std::to_string(i), 0, arrival++, 1 + i % 16);
    p.OnWaiting(*s);
    std::vector<Sequence*> waiting = {flood.front().get(), s.get()};
    std::stable_sort(waiting.begin(), waiting.end(), [&](auto* x, auto* y) { return p.AdmitBefore(*x, *y); });
    p.BeginAdmission(waiting);
    // Both are admitted, in the policy's order.
    for (size_t k; (k = p.NextCandidate()) != SchedulerPolicy::kNone;) p.Admitted(k);
    for (int t = 0; t < 1 + i % 7; ++t) p.OnSampled(*s);
    p.OnSampled(*flood.front());
    p.OnLeave(*s, false);
    p.OnLeave(*flood.front(), false);
    flood.erase(flood.begin());
    add_flood();
    most = std::max(most, p.tracked_tenants());
  }
  std::printf("20,000 one-request tenants beside a flood: at most %zu tracked\n", most);
  EXPECT_LE(most, 130u);  // the flood, plus idle tenants above the floor until a sweep
  EXPECT_GT(p.counter("flood"), 0);
  FairShareOptions keep;
  keep.forget_idle_tenants = false;
  FairSharePolicy q(keep);
  for (int i = 0; i < 1000; ++i) {
    auto s = Seq("once-" + std::to_string(i), 0, static_cast<uint64_t>(i));
    q.OnWaiting(*s);
    std::vector<Sequence*> w = {s.get()};
    q.BeginAdmission(w);
    q.Admitted(0);
    q.OnLeave(*s, false);
  }
  EXPECT_EQ(q.tracked_tenants(), 1000u);  // what the bound is for
}

// ---- through the engine (FakeModel) --------------------------------------------

TEST(FairSharePolicyTest, TheEngineRefusesABadWeight) {
  FakeModel model;
  auto engine = MakeEngine(model, FairOptions());
  for (double w : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    EngineRequest r = Greedy(Ramp(4), 2);
    r.weight = w;
    auto h = engine->Submit(r);
    ASSERT_FALSE(h.ok()) << w;
    EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  }
  EngineOptions o = FairOptions();
  o.fair_share.output_token_cost = -1;
  EXPECT_FALSE(Engine::Create(model, o).ok());
}

TEST(FairSharePolicyTest, AFloodingTenantDoesNotDelayTheOthers) {
  FakeModel model;
  EngineOptions o = FairOptions();
  o.max_running = 2;
  std::vector<Arrival> trace;
  for (int i = 0; i < 30; ++i) trace.push_back(Req(0, "a", 4, 4, i));
  for (int i = 0; i < 3; ++i) trace.push_back(Req(0, "b", 4, 4, 30 + i));
  for (int i = 0; i < 3; ++i) trace.push_back(Req(0, "c", 4, 4, 40 + i));
  const TraceResult fair = RunTrace(model, o, trace);
  o.scheduling = SchedulingMode::kFcfs;
  const TraceResult fcfs = RunTrace(model, o, trace);
  // FCFS: b and c wait behind all 30 of a's. Fair: each gets a third of the
  // admissions while backlogged, so all six are among the first nine.
  EXPECT_EQ(PositionsOf(fcfs, trace, "b"), (std::vector<size_t>{30, 31, 32}));
  for (const char* t : {"b", "c"}) {
    const std::vector<size_t> pos = PositionsOf(fair, trace, t);
    ASSERT_EQ(pos.size(), 3u);
    EXPECT_LT(pos.back(), 9u) << t;
  }
  for (size_t i = 0; i < trace.size(); ++i) EXPECT_EQ(fair.tokens[i], fcfs.tokens[i]) << i;
}

TEST(FairSharePolicyTest, ATenantUnderItsShareStartsAtOnceInAFullPool) {
  FakeModel model;
  EngineOptions o = FairOptions();
  o.max_running = 4;
  std::vector<Arrival> trace;
  // a fills every slot with long requests; b arrives at step 5 with one.
  for (int i = 0; i < 12; ++i) trace.push_back(Req(0, "a", 4, 40, i));
  trace.push_back(Req(5, "b", 4, 4, 50));
  const TraceResult fair = RunTrace(model, o, trace);
  o.fair_share.preempt_for_share = false;
  const TraceResult held = RunTrace(model, o, trace);
  // Preempting one of a's for b's share: b's first token in its first step.
  // Without it b waits for one of a's 40-token requests to finish.
  EXPECT_EQ(fair.ttft[12], 1);
  EXPECT_GT(held.ttft[12], 30);
  // The preempted request resumes by recompute: every output is unchanged.
  for (size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(fair.tokens[i], FakeModel::Greedy(trace[i].prompt, trace[i].max_tokens)) << i;
  }
}

TEST(FairSharePolicyTest, AReturningTenantIsLiftedToTheBackloggedCounter) {
  FakeModel model;
  EngineOptions o = FairOptions();
  o.max_running = 2;
  std::vector<Arrival> trace;
  for (int i = 0; i < 40; ++i) trace.push_back(Req(0, "a", 4, 4, i));
  // b arrives late with 6 requests: lifted to a's counter, it alternates with
  // a instead of cashing in the 30 steps it was idle.
  for (int i = 0; i < 6; ++i) trace.push_back(Req(30, "b", 4, 4, 50 + i));
  const TraceResult r = RunTrace(model, o, trace);
  const std::vector<size_t> b = PositionsOf(r, trace, "b");
  ASSERT_EQ(b.size(), 6u);
  EXPECT_GT(b.front(), 10u);
  // Without the lift (a fresh counter of 0) b would take its six admissions
  // in a row; lifted, it shares them with a about evenly.
  const size_t span = b.back() - b.front() + 1;
  EXPECT_GE(span, 10u);
  EXPECT_LE(span, 13u);
}

TEST(FairSharePolicyTest, WeightsSplitTheAdmissionsInProportion) {
  FakeModel model;
  EngineOptions o = FairOptions();
  o.max_running = 3;
  std::vector<Arrival> trace;
  for (int i = 0; i < 60; ++i) {
    Arrival a = Req(0, i % 2 ? "heavy" : "light", 4, 4, i);
    a.weight = i % 2 ? 2 : 1;
    trace.push_back(a);
  }
  const TraceResult r = RunTrace(model, o, trace);
  int heavy = 0;
  for (size_t k = 0; k < 30; ++k) heavy += trace[r.admission_order[k]].tenant == "heavy";
  EXPECT_NEAR(heavy / 30.0, 2.0 / 3.0, 0.07) << heavy << " of the first 30 admissions";
}

TEST(FairSharePolicyTest, AHigherPriorityIsAdmittedFirstInASaturatedPool) {
  FakeModel model;
  EngineOptions o = FairOptions();
  o.max_running = 2;
  std::vector<Arrival> trace;
  for (int i = 0; i < 20; ++i) trace.push_back(Req(0, "a", 4, 6, i));
  trace.push_back(Req(3, "fresh", 4, 6, 30));  // counter 0 and priority 0
  Arrival p = Req(3, "prov", 4, 6, 40);        // priority 1, arrives with it
  p.priority = 1;
  trace.push_back(p);
  const TraceResult r = RunTrace(model, o, trace);
  const size_t prov = PositionsOf(r, trace, "prov").at(0);
  const size_t fresh = PositionsOf(r, trace, "fresh").at(0);
  EXPECT_LT(prov, fresh);
  EXPECT_EQ(prov, 2u);  // the first slot that frees after it arrives
}

TEST(FairSharePolicyTest, PreemptionTakesTheLowestPriorityFirst) {
  FakeModel model;
  EngineOptions o = FairOptions();
  o.block_size = 4;
  o.kv_memory_bytes = 6 * PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, 4);  // 24 positions
  o.prefix_caching = false;
  std::vector<Arrival> trace;
  for (int i = 0; i < 2; ++i) trace.push_back(Req(0, "a", 6, 10, 7 * i));  // 16 positions each
  Arrival p = Req(0, "prov", 6, 10, 30);
  p.priority = 1;
  trace.push_back(p);
  const TraceResult r = RunTrace(model, o, trace);
  // The pool holds one and a half sequences: the low-priority ones are
  // preempted, the provisioned one runs straight through (admitted first,
  // its 6 prompt tokens and 10 tokens in 10 steps).
  EXPECT_EQ(r.admission_order.front(), 2u);
  EXPECT_EQ(r.finished_step[2], 9);
  EXPECT_GT(r.finished_step[0], 9);
  for (size_t i = 0; i < trace.size(); ++i) EXPECT_EQ(r.tokens[i], FakeModel::Greedy(trace[i].prompt, 10)) << i;
}

// A random trace: arrivals over time, prompt lengths across block and budget
// boundaries, n > 1, a shared head for prefix hits, a small pool (preemptions).
std::vector<Arrival> RandomTrace(uint32_t seed, int n_tenants) {
  std::mt19937 rng(seed);
  std::vector<int32_t> head = Ramp(9, 3);
  std::vector<Arrival> trace;
  for (int i = 0; i < 40; ++i) {
    Arrival a;
    a.step = static_cast<int>(rng() % 40);
    a.tenant = "t" + std::to_string(rng() % n_tenants);
    a.prompt = rng() % 3 == 0 ? head : std::vector<int32_t>{};
    const int extra = 1 + static_cast<int>(rng() % 30);
    for (int k = 0; k < extra; ++k) a.prompt.push_back(static_cast<int32_t>(rng() % 60) + 1);
    a.max_tokens = 1 + static_cast<int>(rng() % 12);
    a.n = rng() % 5 == 0 ? 2 : 1;
    trace.push_back(std::move(a));
  }
  return trace;
}

TEST(FairSharePolicyTest, OneTenantSchedulesExactlyAsFcfs) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<Arrival> trace = RandomTrace(seed, 1);
    EngineOptions o = FairOptions();
    o.kv_memory_bytes = 14 * PagedKvCache::BlockBytes(FakeModel().kv_cache_spec(), KvType::kF32, 4);
    FakeModel fair_model, fcfs_model;
    const TraceResult fair = RunTrace(fair_model, o, trace, std::make_unique<FairSharePolicy>());
    const TraceResult fcfs = RunTrace(fcfs_model, o, trace, std::make_unique<FcfsPolicy>());
    ASSERT_EQ(fair_model.batches.size(), fcfs_model.batches.size()) << seed;
    for (size_t i = 0; i < fair_model.batches.size(); ++i) {
      EXPECT_EQ(fair_model.batches[i].tokens, fcfs_model.batches[i].tokens) << seed << " step " << i;
      EXPECT_EQ(fair_model.batches[i].positions, fcfs_model.batches[i].positions) << seed << " step " << i;
      EXPECT_EQ(fair_model.batches[i].seq_ids, fcfs_model.batches[i].seq_ids) << seed << " step " << i;
    }
    EXPECT_EQ(fair.admission_order, fcfs.admission_order) << seed;
    EXPECT_EQ(fair.tokens, fcfs.tokens) << seed;
  }
}

TEST(FairSharePolicyTest, ThePolicyOnlyReordersGreedyOutputs) {
  for (uint32_t seed : {4u, 5u}) {
    std::vector<Arrival> trace = RandomTrace(seed, 4);
    for (size_t i = 0; i < trace.size(); ++i) trace[i].priority = i % 7 == 0 ? 1 : 0;
    EngineOptions o = FairOptions();
    o.kv_memory_bytes = 14 * PagedKvCache::BlockBytes(FakeModel().kv_cache_spec(), KvType::kF32, 4);
    FakeModel model;
    const TraceResult r = RunTrace(model, o, trace);
    for (size_t i = 0; i < trace.size(); ++i) {
      EXPECT_EQ(r.tokens[i], FakeModel::Greedy(trace[i].prompt, trace[i].max_tokens)) << seed << " request " << i;
    }
  }
}

// A FairSharePolicy that counts the tenants it forgot as they went idle, and
// the sweeps that shrank its table as a tenant joined.
class CountingFairShare final : public SchedulerPolicy {
 public:
  CountingFairShare(const FairShareOptions& o, int* forgotten, int* sweeps)
      : inner_(o), forgotten_(forgotten), sweeps_(sweeps) {}
  bool AdmitBefore(const Sequence& a, const Sequence& b) const override { return inner_.AdmitBefore(a, b); }
  size_t PickVictim(std::span<const Sequence* const> running) const override { return inner_.PickVictim(running); }
  bool ComputeBefore(const Sequence& a, const Sequence& b) const override { return inner_.ComputeBefore(a, b); }
  void BeginAdmission(std::span<Sequence* const> waiting) override { inner_.BeginAdmission(waiting); }
  size_t NextCandidate() override { return inner_.NextCandidate(); }
  void Admitted(size_t i) override { inner_.Admitted(i); }
  void Passed(size_t i) override { inner_.Passed(i); }
  void OnWaiting(Sequence& s) override {
    const size_t before = inner_.tracked_tenants();
    inner_.OnWaiting(s);
    if (inner_.tracked_tenants() < before) ++*sweeps_;
  }
  void OnSampled(const Sequence& s) override { inner_.OnSampled(s); }
  void OnLeave(const Sequence& s, bool was_waiting) override {
    const size_t before = inner_.tracked_tenants();
    inner_.OnLeave(s, was_waiting);
    if (inner_.tracked_tenants() < before) ++*forgotten_;
  }

 private:
  FairSharePolicy inner_;
  int* forgotten_;
  int* sweeps_;
};

// Tenants coming and going: `n` arrivals over 2n steps from 100 tenant ids,
// short prompts, n > 1, weights and priorities.
std::vector<Arrival> ChurnTrace(uint32_t seed, int n) {
  std::mt19937 rng(seed);
  std::vector<Arrival> trace;
  for (int i = 0; i < n; ++i) {
    Arrival a;
    a.step = static_cast<int>(rng() % (2 * n));
    a.tenant = "t" + std::to_string(rng() % 100);
    const int len = 1 + static_cast<int>(rng() % 30);
    for (int k = 0; k < len; ++k) a.prompt.push_back(static_cast<int32_t>(rng() % 60) + 1);
    a.max_tokens = 1 + static_cast<int>(rng() % 12);
    a.n = rng() % 5 == 0 ? 2 : 1;
    a.priority = rng() % 9 == 0 ? 1 : 0;
    a.weight = 1 + static_cast<double>(rng() % 3);
    trace.push_back(std::move(a));
  }
  return trace;
}

TEST(FairSharePolicyTest, ForgettingIdleTenantsChangesNoDecision) {
  // Many tenants coming and going, preemptions in a small pool: the same
  // steps, admissions and tokens with and without forgetting.
  for (uint32_t seed : {11u, 12u, 13u, 14u}) {
    const std::vector<Arrival> trace = ChurnTrace(seed, 300);
    EngineOptions o = FairOptions();
    o.kv_memory_bytes = 14 * PagedKvCache::BlockBytes(FakeModel().kv_cache_spec(), KvType::kF32, 4);
    FairShareOptions forget_opts;
    forget_opts.first_sweep_at = 8;  // sweeps often, beside forgetting as tenants go idle
    FairShareOptions keep = forget_opts;
    keep.forget_idle_tenants = false;
    FakeModel forget_model, keep_model;
    int forgotten = 0, sweeps = 0, forgotten_kept = 0, sweeps_kept = 0;
    const TraceResult forget =
        RunTrace(forget_model, o, trace, std::make_unique<CountingFairShare>(forget_opts, &forgotten, &sweeps));
    const TraceResult kept =
        RunTrace(keep_model, o, trace, std::make_unique<CountingFairShare>(keep, &forgotten_kept, &sweeps_kept));
    std::printf("seed %u: %d tenants forgotten as they went idle, %d sweeps shrank the table\n", seed, forgotten,
                sweeps);
    EXPECT_GT(forgotten, 5) << seed << ": the trace must make tenants leave and return";
    EXPECT_GT(sweeps, 0) << seed;
    EXPECT_EQ(forgotten_kept + sweeps_kept, 0);
    ASSERT_EQ(forget_model.batches.size(), keep_model.batches.size()) << seed;
    for (size_t i = 0; i < forget_model.batches.size(); ++i) {
      EXPECT_EQ(forget_model.batches[i].tokens, keep_model.batches[i].tokens) << seed << " step " << i;
      EXPECT_EQ(forget_model.batches[i].seq_ids, keep_model.batches[i].seq_ids) << seed << " step " << i;
    }
    EXPECT_EQ(forget.admission_order, kept.admission_order) << seed;
    EXPECT_EQ(forget.tokens, kept.tokens) << seed;
  }
}

TEST(FairSharePolicyTest, TheEngineForgetsTenantsThatLeft) {
  // 3,000 distinct tenants through an engine, a few at a time, beside a
  // steady one: the policy's table stays small.
  FakeModel model;
  auto policy = std::make_unique<FairSharePolicy>();
  FairSharePolicy* fair = policy.get();
  auto e = Engine::Create(model, FairOptions(), std::move(policy));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Engine& engine = **e;
  std::vector<RequestHandle> live;
  size_t most = 0;
  int guests = 0;
  for (int step = 0; guests < 3000 && step < 100000; ++step) {
    // A steady tenant and a new guest whenever fewer than 24 requests are in
    // flight: the engine keeps up, guests come and go every few steps.
    if (live.size() < 24) {
      const int i = guests++;
      for (const std::string& tenant : {std::string("steady"), "guest-" + std::to_string(i)}) {
        EngineRequest r = Greedy(Ramp(3 + i % 5), 1 + i % 4);
        r.tenant = tenant;
        auto h = engine.Submit(std::move(r));
        ASSERT_TRUE(h.ok()) << h.status().ToString();
        live.push_back(*h);
      }
    }
    engine.Step();
    std::erase_if(live, [](RequestHandle& h) {
      bool done = false;
      while (auto ev = h->TryPop()) done = done || ev->is_final();
      return done;
    });
    most = std::max(most, fair->tracked_tenants());
  }
  ASSERT_EQ(guests, 3000);
  std::printf("3,000 guest tenants through the engine: at most %zu tracked\n", most);
  while (engine.Step()) {
  }
  EXPECT_LE(most, 200u);
  EXPECT_LE(fair->tracked_tenants(), 130u);
}

TEST(FairSharePolicyTest, APriorityThatFollowsTheReservationDeliversIt) {
  // The control plane's provisioned plan: each request of p runs at
  // priority 1 while p's tokens over the last minute (here 60 steps) are
  // below its reservation, else at 0. a floods. p keeps 8 requests in
  // flight and reserves 6 of the pool's 8 tokens a step, more than the half
  // fair share alone would give it; it must get them, not repay in band 0
  // the service it had in band 1.
  FakeModel model;
  EngineOptions o = FairOptions();
  o.max_running = 8;
  o.max_batch_tokens = 64;
  auto e = Engine::Create(model, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  Engine& engine = **e;
  constexpr int kWindow = 60, kSteps = 900;
  constexpr double kReserved = 6;
  std::vector<int> p_tokens_at(kSteps, 0);  // p's tokens sampled in each step
  int next_id = 0;
  auto submit = [&](const std::string& tenant, int32_t priority) {
    EngineRequest r = Greedy(Ramp(4, 1 + next_id % 50), 8, std::to_string(next_id++));
    r.tenant = tenant;
    r.priority = priority;
    auto h = engine.Submit(std::move(r));
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    return *h;
  };
  auto p_recent = [&](int step) {
    int n = 0;
    for (int k = std::max(0, step - kWindow); k < step; ++k) n += p_tokens_at[static_cast<size_t>(k)];
    return static_cast<double>(n) / kWindow;
  };
  std::vector<RequestHandle> p, a;
  for (int step = 0; step < kSteps; ++step) {
    while (p.size() < 8) p.push_back(submit("p", p_recent(step) < kReserved ? 1 : 0));
    while (a.size() < 40) a.push_back(submit("a", 0));
    engine.Step();
    auto drain = [&](std::vector<RequestHandle>& hs, int* tokens) {
      std::erase_if(hs, [&](RequestHandle& h) {
        bool done = false;
        while (auto ev = h->TryPop()) {
          if (tokens != nullptr) *tokens += ev->has_token();
          done = done || ev->is_final();
        }
        return done;
      });
    };
    drain(p, &p_tokens_at[static_cast<size_t>(step)]);
    drain(a, nullptr);
  }
  int last = 0;
  for (int k = kSteps - 300; k < kSteps; ++k) last += p_tokens_at[static_cast<size_t>(k)];
  const double got = last / 300.0;
  std::printf("p reserves %.1f tokens/step of 8 and gets %.2f under a flood\n", kReserved, got);
  EXPECT_GE(got, 0.9 * kReserved);
}

// ---- on the real model (stories260K) -------------------------------------------

constexpr const char* kModel = "stories260K.gguf";

class FairShareModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_REQUIRE_TESTDATA(kModel);
    l_ = LoadModelAndTokenizer(TestDataPath(kModel), 1);
    ASSERT_TRUE(l_.model);
  }
  std::vector<int32_t> Prompt(uint32_t seed, int len) const {
    std::mt19937 rng(seed);
    std::vector<int32_t> p = {1};
    while (static_cast<int>(p.size()) < len) p.push_back(static_cast<int32_t>(3 + rng() % (l_.model->n_vocab() - 3)));
    return p;
  }
  EngineOptions Options() const {
    EngineOptions o;
    o.n_ctx = 256;
    o.max_running = 8;
    o.max_waiting = 1000;
    o.max_batch_tokens = 64;
    o.scheduling = SchedulingMode::kFair;
    return o;
  }
  LoadedModel l_;
};

TEST_F(FairShareModelTest, ANoisyNeighbourLeavesTheOthersTimeToFirstToken) {
  // Every 12 steps b and c each send a request (c 6 steps after b), well
  // under their share of the engine; a sends ten times as many, far past
  // it. 300-token prompts, 16 to 48 tokens out, 16 sequences, 128 tokens a
  // step.
  auto trace_of = [&](bool with_a) {
    std::vector<Arrival> t;
    auto add = [&](int step, const char* tenant) {
      Arrival x;
      x.step = step;
      x.tenant = tenant;
      x.prompt = Prompt(static_cast<uint32_t>(t.size()) + (tenant[0] == 'a' ? 1000 : 0), 300);
      x.max_tokens = 16 + static_cast<int>((t.size() * 2654435761u) % 33);
      t.push_back(x);
    };
    for (int k = 0; k < 12; ++k) {
      add(12 * k, "b");
      add(12 * k + 6, "c");
      for (int j = 0; with_a && j < 10; ++j) add(12 * k, "a");
    }
    return t;
  };
  auto ttft_of = [](const std::vector<Arrival>& t, const TraceResult& r, const std::string& tenant) {
    std::vector<int> v;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].tenant == tenant) v.push_back(r.ttft[i]);
    }
    return v;
  };
  EngineOptions o = Options();
  o.n_ctx = 512;
  o.max_running = 16;
  o.max_batch_tokens = 128;
  const std::vector<Arrival> alone = trace_of(false), noisy = trace_of(true);
  const TraceResult r_alone = RunTrace(*l_.model, o, alone);
  const TraceResult r_fair = RunTrace(*l_.model, o, noisy);
  o.scheduling = SchedulingMode::kFcfs;
  const TraceResult r_fcfs = RunTrace(*l_.model, o, noisy);
  for (const char* tenant : {"b", "c"}) {
    const double base = Median(ttft_of(alone, r_alone, tenant));
    const double fair = Median(ttft_of(noisy, r_fair, tenant));
    const double fcfs = Median(ttft_of(noisy, r_fcfs, tenant));
    std::printf("tenant %s median TTFT (steps): alone %.1f; a flooding: fair %.1f, fcfs %.1f\n", tenant, base, fair,
                fcfs);
    EXPECT_LE(fair, 1.5 * base) << tenant;
    EXPECT_GT(fcfs, 10 * base) << tenant << ": the trace does not saturate the engine";
  }
  // Same tokens whatever the order.
  for (size_t i = 0; i < noisy.size(); ++i) EXPECT_EQ(r_fair.tokens[i], r_fcfs.tokens[i]) << i;
}

TEST_F(FairShareModelTest, AProvisionedTenantGetsItsReservedShareInASaturatedPool) {
  // p has provisioned half of the 8 sequences (priority 1) and keeps 4
  // requests in flight; s floods at priority 0. p's tokens per step must be
  // within 10% of what it gets with the engine to itself.
  auto run = [&](bool flood, SchedulingMode mode) {
    EngineOptions o = Options();
    o.scheduling = mode;
    auto e = Engine::Create(*l_.model, o);
    EXPECT_TRUE(e.ok());
    Engine& engine = **e;
    auto submit = [&](const std::string& tenant, int32_t priority, uint32_t seed) {
      EngineRequest r;
      r.id = tenant + std::to_string(seed);
      r.prompt = Prompt(seed, 24);
      r.max_tokens = 12;
      r.ignore_eog = true;
      r.sampling.temperature = 0;
      r.tenant = tenant;
      r.priority = priority;
      auto h = engine.Submit(std::move(r));
      EXPECT_TRUE(h.ok());
      return *h;
    };
    std::vector<RequestHandle> p;
    for (uint32_t i = 0; i < 4; ++i) p.push_back(submit("p", 1, i));
    std::vector<RequestHandle> s;
    for (uint32_t i = 0; flood && i < 200; ++i) s.push_back(submit("s", 0, 100 + i));
    int64_t p_tokens = 0;
    uint32_t next = 4;
    constexpr int kSteps = 150;
    for (int step = 0; step < kSteps; ++step) {
      engine.Step();
      for (RequestHandle& h : p) {
        while (auto ev = h->TryPop()) {
          p_tokens += ev->has_token();
          if (ev->is_final()) h = submit("p", 1, next++);  // closed loop: the next one at once
        }
      }
      for (RequestHandle& h : s) {
        while (h->TryPop()) {
        }
      }
      if (flood) EXPECT_GT(engine.scheduler().waiting().size(), 0u) << "the flood ran dry at step " << step;
    }
    return static_cast<double>(p_tokens) / kSteps;
  };
  const double alone = run(false, SchedulingMode::kFair);
  const double fair = run(true, SchedulingMode::kFair);
  const double fcfs = run(true, SchedulingMode::kFcfs);
  std::printf("provisioned tokens/step: alone %.2f; with a flood: fair %.2f, fcfs %.2f\n", alone, fair, fcfs);
  EXPECT_GE(fair, 0.9 * alone);
  EXPECT_LT(fcfs, 0.5 * alone);
}

TEST_F(FairShareModelTest, GreedyOutputsMatchTheRequestAlone) {
  // Tenants, weights and priorities reorder admissions; each request still
  // produces what it produces by itself.
  std::vector<Arrival> trace;
  for (int i = 0; i < 24; ++i) {
    Arrival a;
    a.step = i % 5;
    a.tenant = "t" + std::to_string(i % 3);
    a.priority = i % 7 == 0 ? 1 : 0;
    a.weight = 1 + i % 2;
    a.prompt = Prompt(static_cast<uint32_t>(500 + i), 8 + (i * 13) % 60);
    a.max_tokens = 10;
    trace.push_back(a);
  }
  EngineOptions o = Options();
  o.max_running = 4;
  o.max_batch_tokens = 32;
  const TraceResult r = RunTrace(*l_.model, o, trace);
  for (size_t i = 0; i < trace.size(); ++i) {
    const TraceResult one = RunTrace(*l_.model, o, {trace[i]});
    EXPECT_EQ(r.tokens[i], one.tokens[0]) << i;
  }
}

}  // namespace
}  // namespace pagoda::testing
