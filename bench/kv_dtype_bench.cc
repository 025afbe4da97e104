// KV cache element types, decode speed and capacity (docs/PERFORMANCE.md,
// "KV cache dtypes"). One model load; for each depth (context already in the
// cache), rounds alternate the KV types (A/B interleaving on a noisy
// machine), each round timing n single-token decode steps after `depth`
// tokens of context. Prints the median tokens/s per type and the
// median per-round ratio against the first type (> 1: faster than it). The
// context is prefilled once per type; rounds truncate back to it.
// Then the capacity: positions a paged pool holds at --kv-cache-memory per
// type (block size 16).
//
//   kv_dtype_bench -m MODEL.gguf [-t 2] [--types f16,fp8_e4m3] [--depths 0,2000]
//                  [-n 32] [--rounds 5] [--kv-memory-mib 1024]
//   kv_dtype_bench --attention [-t 2] [--types ...] [--depths 2000] [--rounds 5] [--rows 1]
// --attention times the attention kernel alone: `rows` query rows (1: one
// decode step; more: a prefill chunk at positions depth .. depth + rows - 1)
// of the Llama-1B shape (32 heads, 8 KV heads of 64) over the cached
// positions, rounds of calls alternating the types; no model needed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/ops.h"
#include "model/model.h"
#include "model/paged_kv_cache.h"

namespace pagoda {
namespace {

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

// Median microseconds per Attention() call for each type, and the median
// per-round ratio of the first type's time to each type's (> 1: faster).
int RunAttention(const std::vector<KvType>& types, const std::vector<int32_t>& depths, int rounds, int threads,
                 int n_rows) {
  ThreadPool pool(threads);
  const KvCacheSpec spec{{KvLayerSpec{8, 64, 64}}};
  kernels::AttentionShape sh;
  sh.n_head = 32;
  sh.n_head_kv = 8;
  sh.head_dim_k = sh.head_dim_v = 64;
  sh.scale = 0.125f;
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(n_rows) * 32 * 64), out(q.size()), row(8 * 64);
  for (float& x : q) x = dist(rng);
  for (int32_t depth : depths) {
    std::vector<std::unique_ptr<ContiguousKvCache>> caches;
    for (KvType t : types) {
      auto kv = ContiguousKvCache::Create(spec, 1, depth + n_rows, t);
      if (!kv.ok()) return 1;
      Batch b;
      for (int32_t i = 0; i < depth + n_rows; ++i) b.Add(0, i, 0, false);
      if (!(*kv)->Prepare(b).ok()) return 1;
      std::mt19937 fill(3);
      for (int32_t p = 0; p < depth + n_rows; ++p) {
        for (float& x : row) x = std::normal_distribution<float>(0.0f, 1.0f)(fill);
        (*kv)->WriteK(0, 0, p, row.data());
        (*kv)->WriteV(0, 0, p, row.data());
      }
      caches.push_back(std::move(kv).value());
    }
    std::vector<int32_t> pos(n_rows), rows(n_rows);
    for (int r = 0; r < n_rows; ++r) {
      pos[r] = depth + r;
      rows[r] = r;
    }
    // About as much work per round whatever the shape.
    const int calls = std::max(3, static_cast<int>(200 * 2000 / (static_cast<int64_t>(n_rows) * (depth + n_rows) + 2000)));
    std::vector<std::vector<double>> us(types.size()), ratio(types.size());
    for (int r = -1; r < rounds; ++r) {
      std::vector<double> this_round(types.size());
      for (size_t k = 0; k < types.size(); ++k) {
        kernels::AttentionSeq seq;
        seq.kv = caches[k]->View(0, 0);
        seq.rows = rows.data();
        seq.n_rows = n_rows;
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) {
          kernels::Attention(sh, q.data(), 32 * 64, pos.data(), &seq, 1, out.data(), 32 * 64, pool);
        }
        this_round[k] = 1e6 * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
      }
      if (r < 0) continue;
      for (size_t k = 0; k < types.size(); ++k) {
        us[k].push_back(this_round[k]);
        ratio[k].push_back(this_round[0] / this_round[k]);
      }
    }
    for (size_t k = 0; k < types.size(); ++k) {
      std::printf("attention depth %5d rows %3d  %-9s %8.1f us/call  speed vs %s %.3f\n", depth, n_rows,
                  kernels::KvTypeName(types[k]), Median(us[k]), kernels::KvTypeName(types[0]), Median(ratio[k]));
    }
  }
  return 0;
}

int Run(int argc, char** argv) {
  std::string model_path, types_arg = "f16,fp8_e4m3", depths_arg = "0,2000";
  int threads = 2, n_gen = 32, rounds = 5, attention_rows = 1;
  int64_t kv_mib = 1024;
  bool attention_only = false;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (!std::strcmp(argv[i], "-m")) model_path = next();
    else if (!std::strcmp(argv[i], "-t")) threads = std::atoi(next());
    else if (!std::strcmp(argv[i], "-n")) n_gen = std::atoi(next());
    else if (!std::strcmp(argv[i], "--types")) types_arg = next();
    else if (!std::strcmp(argv[i], "--depths")) depths_arg = next();
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(next());
    else if (!std::strcmp(argv[i], "--kv-memory-mib")) kv_mib = std::atoll(next());
    else if (!std::strcmp(argv[i], "--attention")) attention_only = true;
    else if (!std::strcmp(argv[i], "--rows")) attention_rows = std::atoi(next());
    else {
      std::fprintf(stderr, "kv_dtype_bench: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if ((model_path.empty() && !attention_only) || threads < 1 || n_gen < 1 || rounds < 1 || kv_mib < 1 ||
      attention_rows < 1 || attention_rows > 4096) {
    std::fprintf(stderr, "usage: kv_dtype_bench -m MODEL.gguf [-t N] [--types a,b] [--depths 0,2000] [-n N] "
                         "[--rounds N] [--kv-memory-mib N]\n"
                         "       kv_dtype_bench --attention [-t N] [--types a,b] [--depths 2000] [--rounds N] "
                         "[--rows 1..4096]\n");
    return 2;
  }
  std::vector<KvType> types;
  for (const auto& s : Split(types_arg)) {
    const auto t = kernels::ParseKvType(s);
    if (!t) {
      std::fprintf(stderr, "kv_dtype_bench: unknown KV type '%s' (%s)\n", s.c_str(), kernels::KvTypeChoices());
      return 2;
    }
    types.push_back(*t);
  }
  std::vector<int32_t> depths;
  for (const auto& s : Split(depths_arg)) depths.push_back(std::atoi(s.c_str()));
  for (int32_t d : depths) {
    if (d < 0) {
      std::fprintf(stderr, "kv_dtype_bench: depth %d is negative\n", d);
      return 2;
    }
  }

  if (attention_only) return RunAttention(types, depths, rounds, threads, attention_rows);
  ThreadPool pool(threads);
  auto model = LoadModel(model_path, pool);
  if (!model.ok()) {
    std::fprintf(stderr, "kv_dtype_bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  Model& m = **model;
  std::vector<float> logits(static_cast<size_t>(m.n_vocab()));
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(m.n_vocab() - 1));
  std::printf("model %s, %d threads, %d decode steps per round, %d rounds\n", model_path.c_str(), threads, n_gen,
              rounds);
  for (int32_t depth : depths) {
    std::vector<std::unique_ptr<ContiguousKvCache>> caches;
    for (KvType t : types) {
      auto kv = ContiguousKvCache::Create(m.kv_cache_spec(), 1, depth + n_gen + 1, t);
      if (!kv.ok()) {
        std::fprintf(stderr, "kv_dtype_bench: %s\n", kv.status().ToString().c_str());
        return 1;
      }
      caches.push_back(std::move(kv).value());
    }
    // The context is prefilled once per type (same tokens); each round
    // truncates back to it and times n_gen decode steps from there.
    std::vector<int32_t> context(static_cast<size_t>(depth));
    for (int32_t& t : context) t = tok(rng);
    for (size_t k = 0; k < types.size(); ++k) {
      Batch b;
      for (int32_t i = 0; i < depth; ++i) b.Add(context[i], i, 0, i + 1 == depth);
      if (depth > 0 && !m.Forward(b, *caches[k], logits).ok()) return 1;
    }
    std::vector<std::vector<double>> tps(types.size()), ratio(types.size());
    for (int r = -1; r < rounds; ++r) {  // round -1: warm-up
      std::vector<double> this_round(types.size());
      for (size_t k = 0; k < types.size(); ++k) {
        KvCache& kv = *caches[k];
        kv.Truncate(0, depth);
        Batch b;
        const auto t0 = std::chrono::steady_clock::now();
        for (int32_t i = 0; i < n_gen; ++i) {
          b.Clear();
          b.Add(tok(rng), depth + i, 0, true, /*is_decode=*/true);
          if (!m.Forward(b, kv, logits).ok()) return 1;
        }
        this_round[k] = n_gen / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      if (r < 0) continue;
      for (size_t k = 0; k < types.size(); ++k) {
        tps[k].push_back(this_round[k]);
        ratio[k].push_back(this_round[k] / this_round[0]);
      }
    }
    for (size_t k = 0; k < types.size(); ++k) {
      std::printf("depth %5d  %-9s tg %7.2f t/s  ratio vs %s %.3f\n", depth, kernels::KvTypeName(types[k]),
                  Median(tps[k]), kernels::KvTypeName(types[0]), Median(ratio[k]));
    }
  }
  for (KvType t : types) {
    const int64_t block = PagedKvCache::BlockBytes(m.kv_cache_spec(), t, 16);
    const int64_t tokens = (kv_mib << 20) / block * 16;
    std::printf("capacity at %lld MiB: %-9s %8lld tokens (block of 16 positions: %lld bytes)\n",
                static_cast<long long>(kv_mib), kernels::KvTypeName(t), static_cast<long long>(tokens),
                static_cast<long long>(block));
  }
  return 0;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) { return pagoda::Run(argc, argv); }
