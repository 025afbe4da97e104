// pagoda perplexity: perplexity of a model over a text file under a KV cache
// type, and optionally the teacher-forced top-1 agreement with a reference KV
// type. Windows and scoring: src/engine/perplexity.h; docs/KV_CACHE.md.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "cli_util.h"
#include "commands.h"
#include "engine/perplexity.h"
#include "model_loading.h"

namespace pagoda::cli {

int CmdPerplexity(int argc, char** argv) {
  CLI::App app("Perplexity of a model over a text file (llama.cpp-style windows, second half scored)",
               "perplexity");
  std::string model_path, text_path, kv_type = "f16", compare_kv;
  int32_t threads = DefaultThreadCount(), n_ctx = 512, chunks = 0;
  app.add_option("-m,--model", model_path, "GGUF model (default: the built-in random-weight demo model)");
  app.add_option("-f,--file", text_path, "text file to score")->required();
  app.add_option("--kv-cache-dtype,--kv-type", kv_type, std::string("KV cache element type: ") + kernels::KvTypeChoices());
  app.add_option("--compare-kv-dtype", compare_kv,
                 "also report the top-1 agreement with this reference KV type (teacher-forced on its greedy output)");
  app.add_option("-c,--ctx-size", n_ctx, "window length in tokens (>= 4)");
  app.add_option("--chunks", chunks, "score at most this many windows (0: all)");
  app.add_option("-t,--threads", threads, "threads (default: all cores)");
  // --decode-weights: the scored tokens run as decode steps, so they use the decode copies.
  std::string decode_weights;
  AddDecodeWeightsOption(app, &decode_weights);
  std::string prompts_path;
  int32_t n_generate = 64;
  app.add_option("--prompts", prompts_path,
                 "with --compare-kv-dtype: measure the agreement over these prompts (one per line, \\n for a "
                 "newline) instead of the text's windows");
  app.add_option("--n-generate", n_generate, "with --prompts: greedy tokens compared per prompt (default 64)");
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  const auto model_options = ModelOptionsFromFlags(decode_weights);
  if (!model_options.ok()) return Fail(model_options.status());
  if (threads <= 0 || threads > 1024) return Fail("--threads must be between 1 and 1024");
  const auto type = kernels::ParseKvType(kv_type);
  if (!type) return Fail("--kv-cache-dtype: unknown type '" + kv_type + "' (expected " + kernels::KvTypeChoices() + ")");
  std::optional<KvType> ref_type;
  if (!compare_kv.empty()) {
    ref_type = kernels::ParseKvType(compare_kv);
    if (!ref_type) {
      return Fail("--compare-kv-dtype: unknown type '" + compare_kv + "' (expected " + kernels::KvTypeChoices() + ")");
    }
  }
  if (n_ctx < 4) return Fail("--ctx-size must be at least 4");
  if (!prompts_path.empty() && !ref_type) return Fail("--prompts needs --compare-kv-dtype");
  if (n_generate < 1 || n_generate > 1 << 20) return Fail("--n-generate must be between 1 and 1048576");
  std::vector<std::string> prompt_texts;
  if (!prompts_path.empty()) {
    std::ifstream pin(prompts_path, std::ios::binary);
    if (!pin) return Fail("cannot open prompts file '" + prompts_path + "'");
    for (std::string line; std::getline(pin, line);) {
      std::string p;
      for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == 'n') {
          p += '\n';
          ++i;
        } else {
          p += line[i];
        }
      }
      if (!p.empty()) prompt_texts.push_back(p);
    }
    if (prompt_texts.empty()) return Fail("prompts file '" + prompts_path + "' has no prompt");
  }

  std::ifstream in(text_path, std::ios::binary);
  if (!in) return Fail("cannot open text file '" + text_path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();

  ThreadPool pool(threads);
  auto loaded = LoadModelAndTokenizer(model_path, pool, /*need_tokenizer=*/true, *model_options);
  if (!loaded.ok()) return Fail(loaded.status());
  Model& model = *loaded->model;
  const std::vector<TokenId> tokens = loaded->tokenizer->Encode(text, /*add_special=*/true, /*parse_special=*/false);

  PerplexityOptions po;
  po.n_ctx = n_ctx;
  po.kv_type = *type;
  po.max_windows = chunks;
  auto ppl = ComputePerplexity(model, tokens, po);
  if (!ppl.ok()) return Fail(ppl.status());
  std::printf("perplexity: %.6f\n", ppl->perplexity);
  std::printf("tokens: %lld scored in %d windows of %d (text: %zu tokens); KV cache %s\n",
              static_cast<long long>(ppl->n_scored), ppl->n_windows, n_ctx, tokens.size(),
              kernels::KvTypeName(*type));
  if (ref_type) {
    // Prompts: the given ones, or the first half of each scored window (the
    // reference then generates the second half).
    std::vector<std::vector<TokenId>> prompts;
    int32_t n_gen = n_generate;
    for (const std::string& p : prompt_texts) {
      prompts.push_back(loaded->tokenizer->Encode(p, /*add_special=*/true, /*parse_special=*/false));
    }
    if (prompt_texts.empty()) {
      n_gen = n_ctx - n_ctx / 2;
      for (int32_t w = 0; w < ppl->n_windows; ++w) {
        const auto* start = tokens.data() + static_cast<size_t>(w) * n_ctx;
        prompts.emplace_back(start, start + n_ctx / 2);
      }
    }
    auto agree = CompareTopTokens(EvalConfig{&model, *ref_type}, EvalConfig{&model, *type}, prompts, n_gen);
    if (!agree.ok()) return Fail(agree.status());
    std::printf("top-1 agreement with %s KV: %.6f (%lld of %lld positions)\n", kernels::KvTypeName(*ref_type),
                agree->fraction(), static_cast<long long>(agree->n_agree),
                static_cast<long long>(agree->n_positions));
  }
  return 0;
}

}  // namespace pagoda::cli
