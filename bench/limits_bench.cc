// limits_bench: what a rate-limit check costs per request on each store.
//
// One operation is what the gateway does per request: RateLimiter::Admit with
// three scopes (the key on the model, the tenant on the model, the tenant on
// all models; each with requests, tokens and concurrency limits, so 9
// counters in one atomic store call), then Admission::Settle with the real
// token count (settles 6 token counters and releases 3 slots, one call).
// Limits are set high so every request is admitted. Each thread has its own
// key; all threads share the tenant (its rows are the contended ones).
//
// For each store URL: 1 and 8 threads, paced at --rate operations per second
// in total (open loop) and flat out; prints the median and p99 latency of
// admit+settle and of admit alone, and the rate achieved.
//
// Usage: limits_bench [--seconds 3] [--rate 1000] URL...
//   URL: sqlite:///tmp/x.db | postgresql://user@127.0.0.1:5432/db | redis://127.0.0.1:6379
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "tenancy/counter_store.h"
#include "tenancy/rate_limiter.h"

namespace pagoda::tenancy {
namespace {

using Clock = std::chrono::steady_clock;

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct Figures {
  std::vector<double> total_us, admit_us;
  int errors = 0;
  double seconds = 0;
};

Figures Run(RateLimiter* limiter, int threads, double rate, double seconds, int round) {
  std::vector<Figures> per(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      const std::string model = "bench-model";
      AdmitRequest req;
      const int64_t big = int64_t{1} << 50;
      req.scopes = {
          {"k:r" + std::to_string(round) + "t" + std::to_string(t) + "|m:" + model, "key", big, big, 100'000},
          {"t:r" + std::to_string(round) + "|m:" + model, "tenant on model", big, big, 100'000},
          {"t:r" + std::to_string(round) + "|m:*", "tenant", big, big, 100'000}};
      req.reserve_tokens = 1200;
      Figures& f = per[t];
      ++ready;
      while (!go.load()) std::this_thread::yield();
      const double interval = rate > 0 ? threads / rate : 0;  // seconds between this thread's starts
      const auto deadline = start + std::chrono::duration<double>(seconds);
      for (int64_t i = 0;; ++i) {
        Clock::time_point due = Clock::now();
        if (interval > 0) {
          due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                            interval * (static_cast<double>(i) + static_cast<double>(t) / threads)));
          std::this_thread::sleep_until(due);
        }
        if (due >= deadline) break;
        const auto t0 = Clock::now();
        auto d = limiter->Admit(req);
        const auto t1 = Clock::now();
        if (!d.ok() || !d->admitted()) {
          ++f.errors;
          if (f.errors == 1 && !d.ok()) std::fprintf(stderr, "  error: %s\n", d.status().ToString().c_str());
          continue;
        }
        if (!d->admission->Settle(250).ok()) ++f.errors;
        const auto t2 = Clock::now();
        f.admit_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        f.total_us.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  start = Clock::now();
  go = true;
  for (auto& t : ts) t.join();
  Figures all;
  all.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (Figures& f : per) {
    all.total_us.insert(all.total_us.end(), f.total_us.begin(), f.total_us.end());
    all.admit_us.insert(all.admit_us.end(), f.admit_us.begin(), f.admit_us.end());
    all.errors += f.errors;
  }
  return all;
}

int Main(int argc, char** argv) {
  double seconds = 3, rate = 1000;
  std::vector<std::string> urls;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--rate") && i + 1 < argc) {
      rate = std::atof(argv[++i]);
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "usage: limits_bench [--seconds 3] [--rate 1000] URL...\n");
      return 2;
    } else {
      urls.push_back(argv[i]);
    }
  }
  if (urls.empty()) urls.push_back("sqlite:///tmp/limits_bench_" + std::to_string(::getpid()) + ".db");
  std::printf("limits_bench: CPU %s, %u hardware threads; %.0f s per run; op = Admit (9 counters) + Settle\n",
              CpuModel().c_str(), std::thread::hardware_concurrency(), seconds);
  int round = static_cast<int>(std::chrono::system_clock::now().time_since_epoch().count() % 100000);
  for (const std::string& url : urls) {
    auto store = OpenCounterStore(url);
    if (!store.ok()) {
      std::printf("%s: %s\n", RedactUrlPassword(url).c_str(), store.status().ToString().c_str());
      continue;
    }
    RateLimiter limiter(store->get());
    std::printf("\nstore %s\n", (*store)->Describe().c_str());
    std::printf("  %-8s %-10s %9s %12s %12s %12s %12s %7s\n", "threads", "pacing", "ops/s", "median us",
                "p99 us", "admit med", "admit p99", "errors");
    for (int threads : {1, 8}) {
      for (double r : {rate, 0.0}) {
        Figures f = Run(&limiter, threads, r, seconds, ++round);
        char pacing[32];
        std::snprintf(pacing, sizeof pacing, r > 0 ? "%.0f/s" : "flat out", r);
        const double ops = static_cast<double>(f.total_us.size()) / f.seconds;
        std::printf("  %-8d %-10s %9.0f %12.1f %12.1f %12.1f %12.1f %7d\n", threads, pacing, ops,
                    Percentile(f.total_us, 0.5), Percentile(f.total_us, 0.99), Percentile(f.admit_us, 0.5),
                    Percentile(f.admit_us, 0.99), f.errors);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace pagoda::tenancy

int main(int argc, char** argv) { return pagoda::tenancy::Main(argc, argv); }
