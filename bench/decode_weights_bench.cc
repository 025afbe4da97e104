// Per-phase weights (--decode-weights), speed A/B in one process
// (docs/PERFORMANCE.md, "Decode weights"): the same checkpoint loaded twice,
// A alone and B with 4-bit decode copies; rounds alternate A and B (order
// flipped every round), each timing a prefill of -p tokens and -n
// single-token decode steps after it. Interleaving inside one process keeps
// the load drift of a shared machine out of the ratios. Prints the median
// tokens/s of each and the median of the per-round ratios B/A.
//
//   decode_weights_bench -m MODEL_Q8_0.gguf [-t 2] [-p 512] [-n 64] [--rounds 8] [--type q4_0|q4_k]
// Use an even number of rounds: the summary pairs rounds of opposite order.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "model/decode_weight_store.h"
#include "model/model.h"
#include "model/paged_kv_cache.h"

namespace pagoda {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

struct Timing {
  double pp = 0, tg = 0;  // tokens/s
};

// One prefill of `prompt` then n decode steps, on a fresh cache.
Result<Timing> TimeRound(Model& m, const std::vector<int32_t>& prompt, int n, std::mt19937& rng) {
  PAGODA_ASSIGN_OR_RETURN(auto kv, ContiguousKvCache::Create(m.kv_cache_spec(), 1,
                                                             static_cast<int32_t>(prompt.size()) + n + 1, KvType::kF16));
  std::vector<float> logits(static_cast<size_t>(m.n_vocab()));
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(m.n_vocab() - 1));
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  Timing t;
  auto t0 = std::chrono::steady_clock::now();
  PAGODA_RETURN_IF_ERROR(m.Forward(b, *kv, logits));
  t.pp = prompt.size() / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    b.Clear();
    b.Add(tok(rng), static_cast<int32_t>(prompt.size()) + i, 0, true, /*is_decode=*/true);
    PAGODA_RETURN_IF_ERROR(m.Forward(b, *kv, logits));
  }
  t.tg = n / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

int Run(int argc, char** argv) {
  std::string model_path, type_name = "q4_0";
  int threads = 2, n_prompt = 512, n_gen = 64, rounds = 7;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (!std::strcmp(argv[i], "-m")) model_path = next();
    else if (!std::strcmp(argv[i], "-t")) threads = std::atoi(next());
    else if (!std::strcmp(argv[i], "-p")) n_prompt = std::atoi(next());
    else if (!std::strcmp(argv[i], "-n")) n_gen = std::atoi(next());
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(next());
    else if (!std::strcmp(argv[i], "--type")) type_name = next();
    else {
      std::fprintf(stderr, "decode_weights_bench: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  auto type = ParseDecodeWeightType(type_name);
  if (model_path.empty() || threads < 1 || n_prompt < 1 || n_gen < 1 || rounds < 1 || !type.ok()) {
    std::fprintf(stderr, "usage: decode_weights_bench -m MODEL.gguf [-t N] [-p N] [-n N] [--rounds N] [--type q4_0|q4_k]\n");
    return 2;
  }
  ThreadPool pool(threads);
  ModelOptions with;
  with.decode_weights = *type;
  auto a = LoadModel(model_path, pool);
  auto b = a.ok() ? LoadModel(model_path, pool, with) : a.status();
  if (!a.ok() || !b.ok()) {
    std::fprintf(stderr, "decode_weights_bench: %s\n", (a.ok() ? b.status() : a.status()).ToString().c_str());
    return 1;
  }
  Model* models[2] = {a->get(), b->get()};
  std::mt19937 rng(1);
  std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(models[0]->n_vocab() - 1));
  for (int32_t& t : prompt) t = tok(rng);
  std::printf("model %s, %d threads, pp%d + tg%d per round, %d rounds; A = checkpoint, B = --decode-weights %s\n",
              model_path.c_str(), threads, n_prompt, n_gen, rounds, type_name.c_str());
  std::vector<double> pp[2], tg[2], pp_ratio, tg_ratio;
  for (int r = -1; r < rounds; ++r) {  // round -1: warm-up
    Timing t[2];
    for (int k = 0; k < 2; ++k) {
      const int which = (r & 1) ? 1 - k : k;
      auto res = TimeRound(*models[which], prompt, n_gen, rng);
      if (!res.ok()) {
        std::fprintf(stderr, "decode_weights_bench: %s\n", res.status().ToString().c_str());
        return 1;
      }
      t[which] = *res;
    }
    if (r < 0) continue;
    for (int k = 0; k < 2; ++k) {
      pp[k].push_back(t[k].pp);
      tg[k].push_back(t[k].tg);
    }
    pp_ratio.push_back(t[1].pp / t[0].pp);
    tg_ratio.push_back(t[1].tg / t[0].tg);
    std::printf("round %d: pp A %.1f B %.1f (B/A %.3f)  tg A %.2f B %.2f (B/A %.3f)\n", r, t[0].pp, t[1].pp,
                pp_ratio.back(), t[0].tg, t[1].tg, tg_ratio.back());
    std::fflush(stdout);
  }
  std::printf("median: pp%d A %.1f B %.1f t/s, B/A %.3f; tg%d A %.2f B %.2f t/s, B/A %.3f\n", n_prompt,
              Median(pp[0]), Median(pp[1]), Median(pp_ratio), n_gen, Median(tg[0]), Median(tg[1]),
              Median(tg_ratio));
  // Rounds alternate which model runs first; the first run of a round can be
  // favoured (caches, clocks), so pair each round with the next (opposite
  // order) and take the geometric mean of the two ratios.
  std::vector<double> pp_pair, tg_pair;
  for (size_t r = 0; r + 1 < pp_ratio.size(); r += 2) {
    pp_pair.push_back(std::sqrt(pp_ratio[r] * pp_ratio[r + 1]));
    tg_pair.push_back(std::sqrt(tg_ratio[r] * tg_ratio[r + 1]));
  }
  if (!pp_pair.empty()) {
    std::printf("order-balanced (median over %zu round pairs): pp B/A %.3f, tg B/A %.3f\n", pp_pair.size(),
                Median(pp_pair), Median(tg_pair));
  }
  return 0;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) { return pagoda::Run(argc, argv); }
