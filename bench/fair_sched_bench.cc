// fair_sched_bench: what the fair-share scheduling policy costs an engine
// step, against FCFS.
//
// The engine runs the demo-shaped random model (the shapes of `pagoda
// serve`'s demo model) driven by Step() on this thread, with 64 running
// sequences from 8 tenants and a backlog of waiting ones (each finished
// request is replaced at once, so admissions happen every few steps and
// every tenant stays backlogged). The policy is wrapped in a decorator that
// times every call the scheduler makes into it (comparators included), so
// the figure is the policy's whole cost, timer overhead included: an upper
// bound (the two clock reads per call cost about as much as the calls).
// FCFS and fair rounds are interleaved; the report is the median step time,
// the policy's time per step, and that time as a fraction of the step.
//
// Usage: fair_sched_bench [--running 64] [--tenants 8] [--steps 200] [--rounds 3] [--threads 2]
#include "bench_stats.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/engine.h"
#include "engine/fair_share_policy.h"
#include "gguf/gguf_file.h"
#include "model/random_model.h"

namespace pagoda {
namespace {

using Clock = std::chrono::steady_clock;

using bench::Median;

struct PolicyClock {
  int64_t ns = 0;
  int64_t calls = 0;
};

// Times every call into the wrapped policy.
class TimedPolicy final : public SchedulerPolicy {
 public:
  TimedPolicy(std::unique_ptr<SchedulerPolicy> inner, PolicyClock* clock) : inner_(std::move(inner)), c_(clock) {}

  template <typename F>
  auto Time(F f) const {
    const auto t0 = Clock::now();
    auto r = f();
    c_->ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    ++c_->calls;
    return r;
  }

  bool AdmitBefore(const Sequence& a, const Sequence& b) const override {
    return Time([&] { return inner_->AdmitBefore(a, b); });
  }
  size_t PickVictim(std::span<const Sequence* const> running) const override {
    return Time([&] { return inner_->PickVictim(running); });
  }
  bool ComputeBefore(const Sequence& a, const Sequence& b) const override {
    return Time([&] { return inner_->ComputeBefore(a, b); });
  }
  void BeginAdmission(std::span<Sequence* const> waiting) override {
    Time([&] { return inner_->BeginAdmission(waiting), 0; });
  }
  size_t NextCandidate() override { return Time([&] { return inner_->NextCandidate(); }); }
  void Admitted(size_t i) override { Time([&] { return inner_->Admitted(i), 0; }); }
  void Passed(size_t i) override { Time([&] { return inner_->Passed(i), 0; }); }
  void OnWaiting(Sequence& s) override { Time([&] { return inner_->OnWaiting(s), 0; }); }
  void OnLeave(const Sequence& s, bool w) override { Time([&] { return inner_->OnLeave(s, w), 0; }); }
  void OnSampled(const Sequence& s) override { Time([&] { return inner_->OnSampled(s), 0; }); }

 private:
  std::unique_ptr<SchedulerPolicy> inner_;
  PolicyClock* c_;
};

struct Args {
  int running = 64, tenants = 8, steps = 200, rounds = 3, threads = 2, prompt = 48, gen = 48;
};

struct Figures {
  double step_ms = 0;            // median step
  double policy_us = 0;          // median policy time per step, raw
  double policy_calls = 0;       // median calls per step
};

Figures RunOnce(Model& model, const Args& a, SchedulingMode mode) {
  EngineOptions o;
  o.n_ctx = a.prompt + a.gen + 16;
  o.max_running = a.running;
  o.max_waiting = 4 * a.running;
  o.max_batch_tokens = 512;
  o.prefix_caching = false;
  PolicyClock clock;
  std::unique_ptr<SchedulerPolicy> inner;
  if (mode == SchedulingMode::kFair) {
    inner = std::make_unique<FairSharePolicy>();
  } else {
    inner = std::make_unique<FcfsPolicy>();
  }
  auto engine = Engine::Create(model, o, std::make_unique<TimedPolicy>(std::move(inner), &clock));
  if (!engine.ok()) {
    std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
    std::exit(1);
  }
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(model.n_vocab()) - 1);
  int next_id = 0;
  auto submit = [&] {
    EngineRequest r;
    r.id = std::to_string(next_id);
    r.tenant = "tenant-" + std::to_string(next_id % a.tenants);
    r.weight = 1 + next_id % 3;
    ++next_id;
    for (int i = 0; i < a.prompt; ++i) r.prompt.push_back(tok(rng));
    // Staggered lengths: sequences finish (and others are admitted) every few steps.
    r.max_tokens = a.gen / 2 + static_cast<int>(rng() % static_cast<uint32_t>(a.gen));
    r.ignore_eog = true;
    r.sampling.temperature = 0;
    return (*engine)->Submit(std::move(r)).value();
  };
  std::vector<RequestHandle> handles;
  for (int i = 0; i < a.running + a.running / 2; ++i) handles.push_back(submit());
  // Warm up until the batch is full of decoding sequences.
  for (int i = 0; i < 2 * a.prompt; ++i) (*engine)->Step();
  std::vector<double> steps, policy, calls;
  for (int s = 0; s < a.steps; ++s) {
    const int64_t ns0 = clock.ns, c0 = clock.calls;
    const auto t0 = Clock::now();
    (*engine)->Step();
    steps.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    policy.push_back(static_cast<double>(clock.ns - ns0) / 1e3);
    calls.push_back(static_cast<double>(clock.calls - c0));
    for (auto& h : handles) {
      bool finished = false;
      while (auto ev = h->TryPop()) finished = finished || ev->is_final();
      if (finished) h = submit();
    }
  }
  return Figures{Median(steps), Median(policy), Median(calls)};
}

// Nanoseconds the decorator's two clock reads take around an empty call.
double TimerOverheadNs() {
  PolicyClock c;
  constexpr int kN = 200000;
  const auto t0 = Clock::now();
  for (int i = 0; i < kN; ++i) {
    const auto a = Clock::now();
    c.ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - a).count();
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kN;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) {
  using namespace pagoda;
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--running") a.running = v;
    else if (k == "--tenants") a.tenants = v;
    else if (k == "--steps") a.steps = v;
    else if (k == "--rounds") a.rounds = v;
    else if (k == "--threads") a.threads = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (a.running < 2 || a.tenants < 1 || a.steps < 1 || a.rounds < 1 || a.threads < 1) {
    std::fprintf(stderr, "--running >= 2, --tenants, --steps, --rounds, --threads >= 1\n");
    return 2;
  }
  RandomModelSpec spec;  // the shapes of `pagoda serve`'s demo model
  spec.n_embd = 512;
  spec.n_layer = 4;
  spec.n_head = 8;
  spec.n_head_kv = 4;
  spec.n_ff = 1408;
  spec.n_vocab = 4096;
  spec.weight_type = DType::kQ8_0;
  spec.seed = 42;
  const std::string path = (std::filesystem::temp_directory_path() / "pagoda_fair_sched_bench.gguf").string();
  if (Status st = WriteRandomModel(spec, path); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::shared_ptr<const GgufFile> file(std::move(GgufFile::Open(path)).value());
  ThreadPool pool(a.threads);
  auto model = std::move(LoadModel(file, pool)).value();
  const double overhead = TimerOverheadNs();
  std::printf("demo-shaped random model, %d running sequences from %d tenants, %d steps x %d rounds, %d threads; "
              "an empty timed call costs %.1f ns\n",
              a.running, a.tenants, a.steps, a.rounds, a.threads, overhead);
  std::printf("| round | policy | median step ms | policy us/step | calls/step | fraction of step |\n"
              "| ---: | --- | ---: | ---: | ---: | ---: |\n");
  std::vector<double> frac_fair, frac_fcfs, extra;
  for (int r = 0; r < a.rounds; ++r) {
    Figures f[2];
    for (int k = 0; k < 2; ++k) {
      const SchedulingMode m = (k + r) % 2 ? SchedulingMode::kFair : SchedulingMode::kFcfs;
      Figures& x = f[m == SchedulingMode::kFair];
      x = RunOnce(*model, a, m);
      std::printf("| %d | %s | %.3f | %.2f | %.0f | %.5f |\n", r, SchedulingModeName(m), x.step_ms, x.policy_us,
                  x.policy_calls, x.policy_us / (x.step_ms * 1e3));
      std::fflush(stdout);
    }
    frac_fcfs.push_back(f[0].policy_us / (f[0].step_ms * 1e3));
    frac_fair.push_back(f[1].policy_us / (f[1].step_ms * 1e3));
    extra.push_back((f[1].policy_us - f[0].policy_us) / (f[1].step_ms * 1e3));
  }
  std::printf("median over %d rounds, raw (timer included): fair policy %.4f%% of a step, fcfs %.4f%%, fair - fcfs "
              "%.4f%%\n",
              a.rounds, 100 * Median(frac_fair), 100 * Median(frac_fcfs), 100 * Median(extra));
  std::filesystem::remove(path);
  return 0;
}
