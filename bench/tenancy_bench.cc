// Per-request control-plane overhead: authenticate (TenantCache: one
// generation read, then memory), look up the request's limits, and enqueue
// its usage record (UsageLedger), paced at a fixed request rate. Prints the
// latency distribution of that path, and the same with every lookup going to
// the store (no cache) for comparison.
//
//   build/bench/tenancy_bench [--store URL] [--rate 1000] [--requests 10000] [--keys 100]
//
// URL: a SQLite path (default: a temp file) or postgresql://...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tenancy/api_key.h"
#include "tenancy/key_admin.h"
#include "tenancy/tenant_cache.h"
#include "tenancy/tenant_store.h"
#include "tenancy/usage_ledger.h"

using namespace pagoda::tenancy;
using Clock = std::chrono::steady_clock;

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Report(const char* what, std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  auto q = [&](double p) { return us[std::min(us.size() - 1, static_cast<size_t>(p * us.size()))]; };
  std::printf("%-44s n=%zu  median %.1f us  p90 %.1f us  p99 %.1f us  max %.1f us\n", what, us.size(), q(0.5), q(0.9),
              q(0.99), us.back());
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  int rate = 1000, requests = 10000, nkeys = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--store") url = argv[i + 1];
    else if (a == "--rate") rate = std::atoi(argv[i + 1]);
    else if (a == "--requests") requests = std::atoi(argv[i + 1]);
    else if (a == "--keys") nkeys = std::atoi(argv[i + 1]);
  }
  std::filesystem::path tmp;
  if (url.empty()) {
    tmp = std::filesystem::temp_directory_path() / ("tenancy_bench_" + std::to_string(::getpid()));
    std::filesystem::create_directories(tmp);
    url = (tmp / "bench.db").string();
  }
  auto opened = OpenTenantStore(url);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  TenantStore& store = **opened;
  std::vector<std::string> secrets;
  const int64_t now = NowMs();
  const std::string run = std::to_string(now % 1000000);
  for (int t = 0; t < 10; ++t) {
    Tenant tenant;
    tenant.id = "bench-" + run + "-" + std::to_string(t);
    if (!store.CreateTenant(tenant).ok()) return 1;
    (void)store.SetLimits({LimitScope::kTenant, tenant.id, "", {6000, 1'000'000, 64}});
  }
  for (int k = 0; k < nkeys; ++k) {
    auto key = IssueKey(store, {"bench-" + run + "-" + std::to_string(k % 10), "k", {}, 0}, now);
    if (!key.ok()) return 1;
    secrets.push_back("Bearer " + key->secret);
  }
  std::printf("store %s, %d req/s, %d requests, %d keys\n", store.Describe().c_str(), rate, requests, nkeys);

  for (int mode = 0; mode < 2; ++mode) {
    const bool cached = mode == 0;
    TenantCache cache(store);
    UsageLedger ledger(store);
    std::vector<double> us;
    us.reserve(requests);
    const auto period = std::chrono::nanoseconds(1'000'000'000LL / std::max(1, rate));
    auto next = Clock::now();
    int failures = 0;
    for (int i = 0; i < requests; ++i) {
      std::this_thread::sleep_until(next);
      next += period;
      const auto t0 = Clock::now();
      UsageRecord r;
      r.request_id = "req-" + run + "-" + std::to_string(mode) + "-" + std::to_string(i);
      r.model = "llama";
      r.prompt_tokens = 500;
      r.completion_tokens = 100;
      r.started_at_ms = now;
      if (cached) {
        auto auth = cache.Authenticate(secrets[i % secrets.size()], now);
        if (!auth.ok()) { ++failures; continue; }
        auto limits = cache.LimitsFor(*auth, "llama");
        if (!limits.ok()) { ++failures; continue; }
        r.tenant_id = auth->tenant.id;
        r.key_id = auth->key.id;
      } else {
        auto key = store.FindKeyByHash(HashKey(secrets[i % secrets.size()].substr(7)));
        if (!key.ok()) { ++failures; continue; }
        auto tenant = store.GetTenant(key->tenant_id);
        auto limits = store.ListLimits(key->tenant_id);
        if (!tenant.ok() || !limits.ok()) { ++failures; continue; }
        r.tenant_id = tenant->id;
        r.key_id = key->id;
      }
      ledger.Record(std::move(r));
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    const auto f0 = Clock::now();
    const pagoda::Status flushed = ledger.Flush(std::chrono::seconds(60));
    const double flush_ms = std::chrono::duration<double, std::milli>(Clock::now() - f0).count();
    Report(cached ? "auth+limits+ledger (TenantCache)" : "auth+limits+ledger (store every request)", us);
    const UsageLedgerStats s = ledger.stats();
    std::printf("  failures %d, ledger written %lld in %lld batches (%lld failed), final flush %.1f ms %s\n", failures,
                static_cast<long long>(s.written), static_cast<long long>(s.batches),
                static_cast<long long>(s.failures), flush_ms, flushed.ok() ? "" : flushed.ToString().c_str());
  }
  opened->reset();
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  return 0;
}
