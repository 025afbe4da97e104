// kv_events_bench: what `--kv-events` costs the engine step.
//
// A prefill-heavy workload (every step stores blocks; a KV pool of half the
// streams' need, so blocks are also evicted and removed) through the Engine,
// driven by Step() on this thread, in three modes, interleaved per round:
//   off        no sink
//   publish    the engine's batches go to a kvevents::Publisher nobody reads
//   stuck-sub  the same with a ZeroMQ SUB connected that never reads
// It reports the median engine step, the total wall time and, for the
// publishing modes, the median time the sink (Publisher::Publish) took on
// the engine thread; then the median over rounds of the ratios to off.
//
// Usage: kv_events_bench [--streams 32] [--prompt 256] [--gen 8] [--rounds 5] [--threads 2]
#include "bench_stats.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "base/thread_pool.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "kvevents/publisher.h"
#include "model/random_model.h"

namespace pagoda {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

using bench::Median;

struct Args {
  int streams = 32, prompt = 256, gen = 8, rounds = 5, threads = 2;
};

enum class Mode { kOff, kPublish, kStuckSub };
const char* ModeName(Mode m) { return m == Mode::kOff ? "off" : m == Mode::kPublish ? "publish" : "stuck-sub"; }

struct Figures {
  double step_median = 0, wall = 0, sink_median = 0;
  int64_t batches = 0;
};

Figures RunOnce(Model& model, const Args& a, Mode mode) {
  std::unique_ptr<kvevents::Publisher> pub;
  zmq::context_t ctx;
  zmq::socket_t stuck(ctx, zmq::socket_type::sub);
  std::vector<double> sink_times;
  EngineOptions o;
  o.n_ctx = a.prompt + a.gen + 8;
  o.max_running = a.streams;
  o.max_waiting = a.streams;
  o.max_batch_tokens = 512;
  o.kv_memory_bytes = PagedKvCache::BlockBytes(model.kv_cache_spec(), o.kv_type, o.block_size) *
                      ((o.n_ctx + 15) / 16) * std::max(1, a.streams / 2);
  if (mode != Mode::kOff) {
    kvevents::PublisherOptions po;
    po.endpoint = "tcp://127.0.0.1:*";
    po.replay_endpoint = "tcp://127.0.0.1:*";
    pub = std::move(kvevents::Publisher::Create(po).value());
    if (mode == Mode::kStuckSub) {
      stuck.set(zmq::sockopt::rcvhwm, 1);
      stuck.set(zmq::sockopt::subscribe, "");
      stuck.connect(pub->endpoint());
    }
    o.kv_event_sink = [&](kvevents::EventBatch&& b) {
      const auto t0 = Clock::now();
      pub->Publish(std::move(b));
      sink_times.push_back(Seconds(Clock::now() - t0));
    };
  }
  auto engine = Engine::Create(model, o);
  if (!engine.ok()) {
    std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
    std::exit(1);
  }
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(model.n_vocab()) - 1);
  std::vector<RequestHandle> handles;
  for (int s = 0; s < a.streams; ++s) {
    EngineRequest r;
    r.id = "b" + std::to_string(s);
    for (int i = 0; i < a.prompt; ++i) r.prompt.push_back(tok(rng));
    r.max_tokens = a.gen;
    r.sampling.temperature = 0;
    handles.push_back((*engine)->Submit(std::move(r)).value());
  }
  std::vector<double> steps;
  const auto start = Clock::now();
  for (;;) {
    const auto t0 = Clock::now();
    if (!(*engine)->Step()) break;
    steps.push_back(Seconds(Clock::now() - t0));
    for (auto& h : handles) {
      while (h->TryPop()) {
      }
    }
  }
  Figures f;
  f.wall = Seconds(Clock::now() - start);
  f.step_median = Median(steps);
  f.sink_median = Median(sink_times);
  f.batches = static_cast<int64_t>(sink_times.size());
  return f;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) {
  using namespace pagoda;
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--streams") a.streams = v;
    else if (k == "--prompt") a.prompt = v;
    else if (k == "--gen") a.gen = v;
    else if (k == "--rounds") a.rounds = v;
    else if (k == "--threads") a.threads = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (a.streams < 2 || a.prompt < 16 || a.gen < 1 || a.rounds < 1 || a.threads < 1) {
    std::fprintf(stderr, "--streams >= 2, --prompt >= 16, --gen, --rounds, --threads >= 1\n");
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
  const std::string path = (std::filesystem::temp_directory_path() / "pagoda_kv_events_bench.gguf").string();
  if (Status st = WriteRandomModel(spec, path); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::shared_ptr<const GgufFile> file(std::move(GgufFile::Open(path)).value());
  ThreadPool pool(a.threads);
  auto model = std::move(LoadModel(file, pool)).value();
  std::printf("random demo-shaped model, %d streams, prompt %d, gen %d, %d threads, %d rounds\n", a.streams,
              a.prompt, a.gen, a.threads, a.rounds);
  std::printf("| round | mode | median step ms | wall s | batches | median Publish us |\n"
              "| ---: | --- | ---: | ---: | ---: | ---: |\n");
  RunOnce(*model, a, Mode::kOff);  // warm-up
  std::vector<double> step_pub, step_stuck, wall_pub, wall_stuck;
  for (int r = 0; r < a.rounds; ++r) {
    Figures f[3];
    const Mode order[3] = {r % 2 ? Mode::kPublish : Mode::kOff, r % 2 ? Mode::kOff : Mode::kStuckSub,
                           r % 2 ? Mode::kStuckSub : Mode::kPublish};
    for (Mode m : order) {
      Figures& x = f[static_cast<int>(m)];
      x = RunOnce(*model, a, m);
      std::printf("| %d | %s | %.3f | %.3f | %lld | %.2f |\n", r, ModeName(m), x.step_median * 1e3, x.wall,
                  static_cast<long long>(x.batches), x.sink_median * 1e6);
      std::fflush(stdout);
    }
    step_pub.push_back(f[1].step_median / f[0].step_median);
    step_stuck.push_back(f[2].step_median / f[0].step_median);
    wall_pub.push_back(f[1].wall / f[0].wall);
    wall_stuck.push_back(f[2].wall / f[0].wall);
  }
  std::printf("median over %d rounds, against off: step publish %.4f, stuck-sub %.4f; wall publish %.4f, "
              "stuck-sub %.4f\n",
              a.rounds, Median(step_pub), Median(step_stuck), Median(wall_pub), Median(wall_stuck));
  std::filesystem::remove(path);
  return 0;
}
