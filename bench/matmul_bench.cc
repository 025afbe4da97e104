// MatMul throughput: GEMV (1 token, decode) and GEMM (512 tokens, prefill)
// for each weight type on the 1B-Llama shapes ([n_out x n_in]: 2048x2048
// attention q/o, 512x2048 k/v, 8192x2048 FFN gate/up, 2048x8192 FFN down,
// 32000x2048 output). Counters: GB/s of weight bytes read, GFLOP/s.
// Pool/noop measures one ThreadPool::Run of an empty job.
//
//   matmul_bench [--threads=N] [--hot] [--benchmark_filter=Q4_0]
// GEMV reads its weights from DRAM (cycled copies) unless --hot, which reuses
// one copy (cache-resident when it fits). PAGODA_ISA=avx2|scalar lowers the ISA.
//
//   matmul_bench --ab [--ab-a=legacy] [--ab-b=auto] [--ab-types=Q4_0,Q8_0]
//                [--ab-tokens=1,2,4,8,16,32,64] [--ab-rounds=7] [--threads=N]
//                [--ab-cpu]   (with --threads=1: thread CPU time, see Now())
//                [--ab-b-packed]  (B reads copies packed at load: packed_weights.h)
//                [--ab-shapes=2048x2048,8192x2048]  (n_out x n_in)
// Batched-decode A/B (no Google Benchmark): for each type, shape (2048x2048,
// 8192x2048) and n_tokens, rounds alternate BatchPath A and B (see matmul.h:
// legacy = int8 GEMV below 8 tokens and bf16 GEMM from 8, as before the int8
// panel; auto = today's choice; gemv / panel / gemm force one kernel), each
// round timing ~40 ms of calls on weights cycled from DRAM. Prints the median
// time per call and per token of each path and the median of the per-round
// ratios A/B (> 1: B is faster).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/quantize.h"

namespace pagoda::kernels {
namespace {

int g_threads = 2;
bool g_hot = false;

ThreadPool& Pool() {
  static ThreadPool pool(g_threads);
  return pool;
}

// GEMV weights are cycled through enough copies (>= 512 MiB) that every call
// reads from DRAM, as decode does on a real model.
constexpr int64_t kColdBytes = 512ll << 20;

struct Weight {
  std::vector<uint8_t> bytes;  // one copy
  std::vector<std::vector<uint8_t>> copies;
  std::vector<TensorView> views;
};

const Weight& GetWeight(DType type, int64_t n_out, int64_t n_in) {
  static std::map<std::tuple<int, int64_t, int64_t>, std::unique_ptr<Weight>> cache;
  const auto key = std::make_tuple(static_cast<int>(type), n_out, n_in);
  if (!cache.count(key)) cache.clear();  // keep one weight set (~512 MiB) alive at a time
  auto& slot = cache[key];
  if (!slot) {
    slot = std::make_unique<Weight>();
    const int64_t rb = RowBytes(type, n_in);
    slot->bytes.resize(rb * n_out);
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> row(n_in);
    for (int64_t r = 0; r < n_out; ++r) {
      // A few distinct rows repeated: random content, cheap to build.
      if (r < 64) {
        for (auto& v : row) v = dist(rng);
        if (!QuantizeRow(type, row.data(), slot->bytes.data() + r * rb, n_in).ok()) std::abort();
      } else {
        std::memcpy(slot->bytes.data() + r * rb, slot->bytes.data() + (r % 64) * rb, rb);
      }
    }
    const int64_t n_copies = g_hot ? 1 : std::max<int64_t>(1, kColdBytes / static_cast<int64_t>(slot->bytes.size()));
    slot->copies.assign(n_copies, slot->bytes);
    for (const auto& c : slot->copies) {
      TensorView v;
      v.name = "bench";
      v.type = type;
      v.n_dims = 2;
      v.ne = {n_in, n_out, 1, 1};
      v.data = c.data();
      v.nbytes = static_cast<int64_t>(c.size());
      slot->views.push_back(v);
    }
  }
  return *slot;
}

void BM_MatMul(benchmark::State& state, DType type, int64_t n_out, int64_t n_in, int64_t n_tok) {
  const Weight& w = GetWeight(type, n_out, n_in);
  std::vector<float> x(n_tok * n_in), y(n_tok * n_out);
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto& v : x) v = dist(rng);
  ThreadPool& pool = Pool();
  const size_t n_views = n_tok == 1 && !g_hot ? w.views.size() : 1;
  size_t i = 0;
  for (auto _ : state) {
    MatMul(w.views[i], x.data(), n_tok, y.data(), pool);
    if (++i == n_views) i = 0;
    benchmark::ClobberMemory();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(iters * static_cast<double>(w.bytes.size()) * 1e-9,
                                              benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(iters * 2.0 * n_out * n_in * n_tok * 1e-9,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(std::string(IsaName(ActiveIsa())) + " t=" + std::to_string(g_threads));
}

void BM_PoolNoop(benchmark::State& state) {
  ThreadPool& pool = Pool();
  std::atomic<int> sink{0};
  for (auto _ : state) {
    pool.Run([&](int ith, int nth) { sink.fetch_add(ith, std::memory_order_relaxed); });
  }
  state.SetLabel("t=" + std::to_string(g_threads));
}

struct AbOptions {
  BatchPath a = BatchPath::kLegacy, b = BatchPath::kAuto;
  std::vector<DType> types = {DType::kQ4_0, DType::kQ8_0};
  std::vector<int64_t> tokens = {1, 2, 4, 8, 16, 32, 64};
  int rounds = 7;
  bool b_packed = false;  // --ab-b-packed: B reads load-time packed copies (packed_weights.h)
  std::vector<std::array<int64_t, 2>> shapes = {{2048, 2048}, {8192, 2048}};
};

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// --ab-cpu: time with the calling thread's CPU clock (use with --threads=1,
// where MatMul runs on the calling thread): robust to other processes
// taking the cores, which wall time on a shared machine is not.
bool g_cpu_clock = false;

double Now() {
  if (g_cpu_clock) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds per call of `n` calls cycling through the copies of w.
double TimeCalls(const std::vector<TensorView>& views, const float* x, int64_t n_tok, float* y, int n,
                 size_t* next) {
  ThreadPool& pool = Pool();
  const double t0 = Now();
  for (int i = 0; i < n; ++i) {
    MatMul(views[*next % views.size()], x, n_tok, y, pool);
    if (++*next == views.size()) *next = 0;
  }
  return (Now() - t0) / n;
}

int RunAb(const AbOptions& o) {
  const auto& shapes = o.shapes;
  std::printf("# matmul A/B: A = %s, B = %s; isa %s, threads %d, %d rounds, %s time\n", BatchPathName(o.a),
              BatchPathName(o.b), IsaName(ActiveIsa()), g_threads, o.rounds, g_cpu_clock ? "thread CPU" : "wall");
  std::printf("| type | shape | n_tok | A us/call | B us/call | A us/tok | B us/tok | A/B |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (DType type : o.types) {
    for (const auto& s : shapes) {
      const Weight& w = GetWeight(type, s[0], s[1]);
      // B's views: the same copies, packed at "load" when asked.
      PackedWeightStore store(Pool());
      std::vector<TensorView> bviews = w.views;
      if (o.b_packed) {
        for (TensorView& v : bviews) v = *store.Add(v);
      }
      for (int64_t n_tok : o.tokens) {
        std::vector<float> x(n_tok * s[1]), y(n_tok * s[0]);
        std::mt19937 rng(2);
        std::normal_distribution<float> dist(0.0f, 1.0f);
        for (auto& v : x) v = dist(rng);
        size_t next = 0;
        // Calibrate the calls per round on path B (after one warm-up call each).
        SetBatchPathForTesting(o.a);
        TimeCalls(w.views, x.data(), n_tok, y.data(), 1, &next);
        SetBatchPathForTesting(o.b);
        const double probe = TimeCalls(bviews, x.data(), n_tok, y.data(), 2, &next);
        const int calls = std::max(1, static_cast<int>(0.04 / std::max(probe, 1e-7)));
        std::vector<double> ta, tb, ratio;
        for (int r = 0; r < o.rounds; ++r) {
          SetBatchPathForTesting(o.a);
          const double a = TimeCalls(w.views, x.data(), n_tok, y.data(), calls, &next);
          SetBatchPathForTesting(o.b);
          const double b = TimeCalls(bviews, x.data(), n_tok, y.data(), calls, &next);
          ta.push_back(a);
          tb.push_back(b);
          ratio.push_back(a / b);
        }
        const double ma = MedianOf(ta) * 1e6, mb = MedianOf(tb) * 1e6;
        std::printf("| %s | %lldx%lld | %lld | %.1f | %.1f | %.2f | %.2f | %.2f |\n", DTypeName(type),
                    static_cast<long long>(s[0]), static_cast<long long>(s[1]), static_cast<long long>(n_tok), ma, mb,
                    ma / n_tok, mb / n_tok, MedianOf(ratio));
        std::fflush(stdout);
      }
    }
  }
  SetBatchPathForTesting(BatchPath::kAuto);
  return 0;
}

std::vector<std::string> SplitCommas(const char* s) {
  std::vector<std::string> out;
  std::string cur;
  for (; *s; ++s) {
    if (*s == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += *s;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

void Register() {
  benchmark::RegisterBenchmark("Pool/noop", BM_PoolNoop)->UseRealTime();
  const DType types[] = {DType::kQ4_0, DType::kQ8_0, DType::kF16, DType::kBF16, DType::kQ4_1, DType::kQ5_0,
                         DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kF32};
  const int64_t shapes[][2] = {{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {32000, 2048}};
  for (DType t : types) {
    for (const auto& s : shapes) {
      for (int64_t n_tok : {1, 512}) {
        // GEMM on the two main shapes only; no f32 output matrix (1 GiB of copies).
        if (n_tok == 512 && (s[0] == 512 || s[1] == 8192 || s[0] == 32000)) continue;
        if (t == DType::kF32 && s[0] == 32000) continue;
        const std::string name = std::string(DTypeName(t)) + "/" + (n_tok == 1 ? "gemv" : "gemm") + "/" +
                                 std::to_string(s[0]) + "x" + std::to_string(s[1]);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_MatMul, t, s[0], s[1], n_tok);
        b->Unit(benchmark::kMicrosecond)->UseRealTime();
        if (n_tok == 512) b->MinTime(0.5);
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels

int main(int argc, char** argv) {
  std::vector<char*> rest;
  bool ab = false;
  pagoda::kernels::AbOptions abo;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ab") == 0) {
      ab = true;
    } else if (std::strcmp(argv[i], "--ab-b-packed") == 0) {
      abo.b_packed = true;
    } else if (std::strcmp(argv[i], "--ab-cpu") == 0) {
      pagoda::kernels::g_cpu_clock = true;
    } else if (std::strncmp(argv[i], "--ab-a=", 7) == 0 || std::strncmp(argv[i], "--ab-b=", 7) == 0) {
      const auto p = pagoda::kernels::ParseBatchPath(argv[i] + 7);
      if (!p) {
        std::fprintf(stderr, "matmul_bench: unknown path '%s' (auto|legacy|gemv|panel|gemm)\n", argv[i] + 7);
        return 2;
      }
      (argv[i][5] == 'a' ? abo.a : abo.b) = *p;
    } else if (std::strncmp(argv[i], "--ab-rounds=", 12) == 0) {
      abo.rounds = std::max(1, std::atoi(argv[i] + 12));
    } else if (std::strncmp(argv[i], "--ab-tokens=", 12) == 0) {
      abo.tokens.clear();
      for (const auto& t : pagoda::kernels::SplitCommas(argv[i] + 12)) {
        const long long n = std::atoll(t.c_str());
        if (n <= 0 || n > 4096) {
          std::fprintf(stderr, "matmul_bench: bad token count '%s'\n", t.c_str());
          return 2;
        }
        abo.tokens.push_back(n);
      }
    } else if (std::strncmp(argv[i], "--ab-shapes=", 12) == 0) {
      abo.shapes.clear();
      for (const std::string& v : pagoda::kernels::SplitCommas(argv[i] + 12)) {
        long long n_out = 0, n_in = 0;
        if (std::sscanf(v.c_str(), "%lldx%lld", &n_out, &n_in) != 2 || n_out <= 0 || n_in <= 0) {
          std::fprintf(stderr, "bad --ab-shapes entry %s\n", v.c_str());
          return 2;
        }
        abo.shapes.push_back({n_out, n_in});
      }
    } else if (std::strncmp(argv[i], "--ab-types=", 11) == 0) {
      abo.types.clear();
      for (const auto& t : pagoda::kernels::SplitCommas(argv[i] + 11)) {
        const auto type = pagoda::ParseDType(t);
        if (!type) {
          std::fprintf(stderr, "matmul_bench: unknown type '%s'\n", t.c_str());
          return 2;
        }
        abo.types.push_back(*type);
      }
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      pagoda::kernels::g_threads = std::atoi(argv[i] + 10);
    } else if (std::strcmp(argv[i], "--hot") == 0) {
      pagoda::kernels::g_hot = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (ab) return pagoda::kernels::RunAb(abo);
  int n = static_cast<int>(rest.size());
  pagoda::kernels::Register();
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
