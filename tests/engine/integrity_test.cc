// KV page integrity in the engine. Each planted fault (a block freed and
// handed out again, a retagged block, table entries swapped between two
// sequences) stops exactly the sequences it touches with the integrity error,
// while six other greedy requests on a random-weight model produce exactly the
// tokens of a fault-free run. A long randomized soak with prefix caching,
// preemption, n > 1 and cancellation raises no false alarm.
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "engine/fake_model.h"
#include "gguf/gguf_file.h"
#include "kv/integrity_tracker.h"
#include "model/random_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

using testing::Drain;
using testing::Greedy;
using testing::Outcome;

constexpr int kRequests = 8;
constexpr int kMaxTokens = 24;
constexpr int kSoakRequests = 3000;

struct RandomModel {
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Model> model;
};

RandomModel& SharedModel() {
  static RandomModel* m = [] {
    RandomModelSpec spec;
    spec.n_embd = 64;
    spec.n_layer = 2;
    spec.n_head = 4;
    spec.n_head_kv = 2;
    spec.n_ff = 128;
    spec.n_vocab = 320;
    spec.n_ctx = 512;
    spec.seed = 11;
    spec.n_threads = 1;
    const std::string path = (::pagoda::testing::TempDirForProcess() / "pagoda_integrity_model.gguf").string();
    Status st = WriteRandomModel(spec, path);
    EXPECT_TRUE(st.ok()) << st.ToString();
    auto file = GgufFile::Open(path);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    std::shared_ptr<const GgufFile> shared(std::move(file).value());
    auto* r = new RandomModel();
    r->pool = std::make_unique<ThreadPool>(1);
    auto model = LoadModel(shared, *r->pool);
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    r->model = std::move(model).value();
    return r;
  }();
  return *m;
}

// The load runs on the random-weight model or on FakeModel, whose output is
// known independently (FakeModel::Greedy) whatever the batch composition.
enum class Load { kRandomModel, kFakeModel };

EngineOptions LoadOptions(Load load, kv::IntegrityMode mode) {
  EngineOptions o;
  o.n_ctx = 256;
  o.max_running = kRequests;
  o.max_waiting = 64;
  o.max_batch_tokens = 48;
  o.block_size = 4;
  if (load == Load::kFakeModel) o.kv_type = KvType::kF32;
  o.kv_integrity = mode;
  return o;
}

// Prompts of 9 to 30 tokens; every other one starts with the same 12-token
// head, so later ones adopt cached blocks.
std::vector<EngineRequest> LoadRequests(Load load) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> tok(3, load == Load::kFakeModel ? 60 : 250);
  std::vector<int32_t> head;
  for (int i = 0; i < 12; ++i) head.push_back(tok(rng));
  std::vector<EngineRequest> out;
  for (int r = 0; r < kRequests; ++r) {
    std::vector<int32_t> p = r % 2 ? head : std::vector<int32_t>{1};
    for (int i = 0; i < 8 + (r * 5) % 19; ++i) p.push_back(tok(rng));
    EngineRequest q = Greedy(p, kMaxTokens, "r" + std::to_string(r));
    q.ignore_eog = true;
    out.push_back(std::move(q));
  }
  return out;
}

struct Fault {
  KvFault kind;
  int target;       // request index
  int other = -1;   // kSwap: the request it swaps with
  int after_steps;  // steps run before planting it
};

struct RunResult {
  std::map<std::string, Outcome> outcomes;
  EngineStats stats;
  int32_t held_after = 0;  // pool blocks still held when idle
};

// With `fault` and cancel_instead, the affected requests are cancelled at
// the step the fault would be planted: the same batches as the faulty run
// from then on (a cancellation and a failed check both drop the sequence
// before that step's forward pass), so every other request must produce
// bit-identical tokens even on a model whose greedy choice depends on the
// batch's shape.
RunResult RunLoad(Load load, kv::IntegrityMode mode, const Fault* fault, bool cancel_instead = false) {
  testing::FakeModel fake;
  Model& model = load == Load::kFakeModel ? static_cast<Model&>(fake) : *SharedModel().model;
  auto engine = testing::MakeEngine(model, LoadOptions(load, mode));
  std::map<std::string, RequestHandle> handles;
  for (EngineRequest& r : LoadRequests(load)) {
    const std::string id = r.id;
    auto h = engine->Submit(std::move(r));
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    handles[id] = *h;
  }
  RunResult res;
  std::map<std::string, std::vector<Outcome>> outs;
  for (int step = 0; step < 10000; ++step) {
    if (fault != nullptr && step == fault->after_steps) {
      const std::string target = "r" + std::to_string(fault->target);
      const std::string other = fault->other >= 0 ? "r" + std::to_string(fault->other) : "";
      if (cancel_instead) {
        handles[target]->Cancel();
        if (!other.empty()) handles[other]->Cancel();
      } else {
        const Status st = engine->InjectKvFaultForTesting(fault->kind, target, 0, other);
        EXPECT_TRUE(st.ok()) << st.ToString();
      }
    }
    const bool ran = engine->Step();
    for (auto& [id, h] : handles) Drain(*h, outs[id]);
    if (!ran) break;
  }
  for (auto& [id, o] : outs) {
    EXPECT_EQ(o.size(), 1u);
    res.outcomes[id] = o.at(0);
  }
  res.stats = engine->stats();
  res.held_after = engine->kv_cache().pool().n_held();
  return res;
}

TEST(EngineIntegrityTest, FaultFreeRunFinishesEveryRequestWithoutAlarm) {
  for (Load load : {Load::kRandomModel, Load::kFakeModel}) {
    const RunResult ref = RunLoad(load, kv::IntegrityMode::kCheck, nullptr);
    ASSERT_EQ(ref.outcomes.size(), static_cast<size_t>(kRequests));
    for (const auto& [id, o] : ref.outcomes) {
      EXPECT_TRUE(o.finished) << id;
      EXPECT_EQ(o.final_event.finish, FinishReason::kLength) << id;
      EXPECT_EQ(o.tokens.size(), static_cast<size_t>(kMaxTokens)) << id;
    }
    EXPECT_EQ(ref.stats.kv_integrity_failures_total, 0);
    EXPECT_GT(ref.stats.prefix_cache_hits, 0) << "the load should share cached blocks";
    EXPECT_EQ(ref.held_after, 0);
    // The same load with the check off produces the same tokens.
    const RunResult off = RunLoad(load, kv::IntegrityMode::kOff, nullptr);
    for (const auto& [id, o] : ref.outcomes) EXPECT_EQ(off.outcomes.at(id).tokens, o.tokens) << id;
  }
}

class EngineFaultTest : public ::testing::TestWithParam<std::tuple<Load, Fault>> {};

TEST_P(EngineFaultTest, StopsExactlyTheAffectedRequests) {
  const auto [load, f] = GetParam();
  const RunResult got = RunLoad(load, kv::IntegrityMode::kCheck, &f);
  const RunResult ref = RunLoad(load, kv::IntegrityMode::kCheck, &f, /*cancel_instead=*/true);
  const std::vector<EngineRequest> requests = LoadRequests(load);
  std::set<std::string> affected = {"r" + std::to_string(f.target)};
  if (f.other >= 0) affected.insert("r" + std::to_string(f.other));
  for (const auto& [id, o] : got.outcomes) {
    const Outcome& want = ref.outcomes.at(id);
    ASSERT_TRUE(o.finished) << id;
    // What every request streamed is what it streams without the fault.
    EXPECT_EQ(o.tokens, want.tokens) << id << (affected.count(id) ? "" : " changed by a fault in another request");
    if (affected.count(id) != 0) {
      EXPECT_EQ(want.final_event.finish, FinishReason::kCancelled) << id;
      EXPECT_EQ(o.final_event.finish, FinishReason::kError) << id;
      EXPECT_TRUE(kv::IsIntegrityError(o.final_event.error)) << id << ": " << o.final_event.error.ToString();
      EXPECT_LT(o.tokens.size(), static_cast<size_t>(kMaxTokens)) << id;
    } else {
      EXPECT_EQ(o.final_event.finish, FinishReason::kLength) << id;
      EXPECT_TRUE(o.final_event.error.ok()) << id;
      EXPECT_EQ(o.tokens.size(), static_cast<size_t>(kMaxTokens)) << id;
    }
    if (load == Load::kFakeModel) {  // an independent reference as well
      const int r = std::stoi(id.substr(1));
      const auto greedy = testing::FakeModel::Greedy(requests[r].prompt, kMaxTokens);
      EXPECT_TRUE(std::equal(o.tokens.begin(), o.tokens.end(), greedy.begin())) << id;
    }
  }
  EXPECT_EQ(got.stats.kv_integrity_failures_total, static_cast<int64_t>(affected.size()));
  EXPECT_EQ(got.stats.requests_failed_total, static_cast<int64_t>(affected.size()));
  // kReuse: the block went to another holder; kRetag: the block is in doubt
  // and stays quarantined; kSwap: both sequences release what they were given.
  EXPECT_EQ(got.held_after, f.kind == KvFault::kSwap ? 0 : 1);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, EngineFaultTest,
    ::testing::Combine(::testing::Values(Load::kRandomModel, Load::kFakeModel),
                       ::testing::Values(Fault{KvFault::kReuse, 3, -1, 6}, Fault{KvFault::kRetag, 0, -1, 9},
                                         Fault{KvFault::kSwap, 2, 5, 7}, Fault{KvFault::kReuse, 6, -1, 12},
                                         Fault{KvFault::kRetag, 5, -1, 14}, Fault{KvFault::kSwap, 7, 1, 11})),
    [](const auto& info) {
      const Fault& f = std::get<1>(info.param);
      const char* k = f.kind == KvFault::kReuse ? "Reuse" : f.kind == KvFault::kRetag ? "Retag" : "Swap";
      return std::string(std::get<0>(info.param) == Load::kFakeModel ? "Fake" : "Random") + k + "R" +
             std::to_string(f.target) + "At" + std::to_string(f.after_steps);
    });

TEST(EngineIntegrityTest, OffTrackerLetsAFaultThrough) {
  // The same retag with the check off goes unnoticed: off really is a no-op.
  const Fault f{KvFault::kRetag, 0, -1, 9};
  const RunResult got = RunLoad(Load::kRandomModel, kv::IntegrityMode::kOff, &f);
  EXPECT_EQ(got.stats.kv_integrity_failures_total, 0);
  EXPECT_EQ(got.stats.requests_failed_total, 0);
}

// Randomized soak on FakeModel (its logits are a function of the tokens read
// back from the KV cache, so any page mix-up changes the output): 3000
// requests with shared prefixes, n up to 3, random cancellation, a pool small
// enough to force preemption. No integrity failure, every uncancelled
// sequence produces FakeModel::Greedy, and no block is left held.
TEST(EngineIntegrityTest, SoakRaisesNoFalseAlarm) {
  testing::FakeModel model;
  EngineOptions o = testing::FakeOptions();
  o.max_running = 6;
  o.max_waiting = 4096;
  o.kv_memory_bytes = PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF32, o.block_size) * 40;
  o.kv_integrity = kv::IntegrityMode::kCheck;
  auto engine = testing::MakeEngine(model, o);
  std::mt19937 rng(99);
  std::vector<std::vector<int32_t>> heads;
  for (int h = 0; h < 4; ++h) heads.push_back(testing::Ramp(4 + 4 * h, 7 * h + 1));
  struct Live {
    EngineRequest request;
    RequestHandle handle;
    std::vector<Outcome> outs;
    bool cancelled = false;
    bool done = false;
  };
  std::vector<Live> live;
  int submitted = 0;
  for (int step = 0; step < 200000 && (submitted < kSoakRequests || !engine->scheduler().idle()); ++step) {
    if (submitted < kSoakRequests && rng() % 2 == 0) {
      std::vector<int32_t> p = heads[rng() % heads.size()];
      for (int i = 0, n = static_cast<int>(rng() % 9); i < n; ++i) p.push_back(static_cast<int32_t>(rng() % 60) + 1);
      EngineRequest r = Greedy(p, 1 + static_cast<int>(rng() % 30), "s" + std::to_string(submitted));
      r.ignore_eog = true;
      r.n = 1 + static_cast<int32_t>(rng() % 3);
      auto h = engine->Submit(r);
      ASSERT_TRUE(h.ok()) << h.status().ToString();
      live.push_back(Live{r, *h, {}, false, false});
      ++submitted;
    }
    if (!live.empty() && rng() % 25 == 0) {
      Live& l = live[rng() % live.size()];
      l.handle->Cancel();
      l.cancelled = true;
    }
    engine->Step();
    for (Live& l : live) {
      if (l.done) continue;
      Drain(*l.handle, l.outs);
      l.done = l.outs.size() == static_cast<size_t>(l.request.n) &&
               std::all_of(l.outs.begin(), l.outs.end(), [](const Outcome& o) { return o.finished; });
    }
  }
  ASSERT_TRUE(engine->scheduler().idle());
  const EngineStats st = engine->stats();
  EXPECT_EQ(st.kv_integrity_failures_total, 0);
  EXPECT_GT(st.preemptions_total, 0) << "the soak should preempt";
  EXPECT_GT(st.prefix_cache_hits, 0) << "the soak should adopt cached blocks";
  EXPECT_GT(st.requests_cancelled_total, 0);
  EXPECT_EQ(engine->kv_cache().pool().n_held(), 0);
  int checked = 0;
  for (const Live& l : live) {
    ASSERT_EQ(l.outs.size(), static_cast<size_t>(l.request.n)) << l.request.id;
    for (const Outcome& out : l.outs) {
      ASSERT_TRUE(out.finished) << l.request.id;
      if (out.final_event.finish == FinishReason::kCancelled) continue;
      EXPECT_EQ(out.final_event.finish, FinishReason::kLength)
          << l.request.id << ": " << out.final_event.error.ToString();
      EXPECT_EQ(out.tokens, testing::FakeModel::Greedy(l.request.prompt, l.request.max_tokens)) << l.request.id;
      ++checked;
    }
  }
  EXPECT_GT(checked, kSoakRequests * 3 / 4);
}

}  // namespace
}  // namespace pagoda
