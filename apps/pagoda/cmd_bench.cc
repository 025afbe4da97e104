// pagoda bench: llama-bench-style pp/tg throughput.
#include <cstdio>

#include "base/thread_pool.h"
#include "cli_util.h"
#include "commands.h"
#include "engine/speed_bench.h"
#include "model_loading.h"

namespace pagoda::cli {

int CmdBench(int argc, char** argv) {
  CLI::App app("Prompt-processing (ppN) and generation (tgN) speed, llama-bench style", "bench");
  std::string model_path;
  SpeedBenchOptions opt;
  int threads = DefaultThreadCount();
  std::string kv_type = "f16";
  app.add_option("-m,--model", model_path, "GGUF model (default: the demo model)");
  app.add_option("-p,--n-prompt", opt.n_prompt, "prompt tokens for pp (0 skips)");
  app.add_option("-n,--n-gen", opt.n_gen, "generated tokens for tg (0 skips)");
  app.add_option("-r,--repetitions", opt.repetitions, "repetitions (median reported)");
  app.add_option("-t,--threads", threads, "threads (default: all cores)");
  app.add_option("--parallel", opt.n_parallel,
                 "sequences decoded at once in tg: each step is one batch of this many tokens; t/s is the aggregate");
  app.add_option("--kv-cache-dtype,--kv-type", kv_type,
                 std::string("KV cache element type: ") + kernels::KvTypeChoices() + " (default f16)");
  app.add_option("-d,--n-depth", opt.n_depth, "context already in the KV cache before each pp / tg run");
  std::string decode_weights;
  AddDecodeWeightsOption(app, &decode_weights);
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  const auto model_options = ModelOptionsFromFlags(decode_weights);
  if (!model_options.ok()) return Fail(model_options.status());
  const auto parsed_kv = kernels::ParseKvType(kv_type);
  if (!parsed_kv) {
    return Fail("--kv-cache-dtype: unknown type '" + kv_type + "' (expected " + kernels::KvTypeChoices() + ")");
  }
  opt.kv_type = *parsed_kv;
  if (threads <= 0 || threads > 1024) return Fail("--threads must be between 1 and 1024");
  if (opt.n_prompt < 0 || opt.n_gen < 0 || opt.repetitions <= 0 || opt.n_prompt > 1 << 20 || opt.n_gen > 1 << 20 ||
      opt.n_depth < 0 || opt.n_depth > 1 << 20) {
    return Fail("-p, -n and -d must be in [0, 1048576] and -r positive");
  }
  if (opt.n_parallel <= 0 || opt.n_parallel > 4096) return Fail("--parallel must be between 1 and 4096");

  ThreadPool pool(threads);
  auto loaded = LoadModelAndTokenizer(model_path, pool, /*need_tokenizer=*/false, *model_options);
  if (!loaded.ok()) return Fail(loaded.status());
  const ModelConfig& c = loaded->model->config();
  uint64_t bytes = 0, params = 0;
  for (const auto& t : loaded->file->tensors()) {
    bytes += static_cast<uint64_t>(t.nbytes);
    params += static_cast<uint64_t>(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]);
  }
  std::fprintf(stderr, "pagoda: loaded %s in %.3f s; KV cache %s\n", loaded->file->path().c_str(),
               loaded->load_seconds, kv_type.c_str());
  auto res = RunSpeedBench(*loaded->model, opt);
  if (!res.ok()) return Fail(res.status());

  auto fmt_samples = [](const std::vector<double>& v) {
    std::string s;
    char buf[32];
    for (double x : v) {
      std::snprintf(buf, sizeof buf, "%s%.2f", s.empty() ? "" : ", ", x);
      s += buf;
    }
    return s;
  };
  std::printf("| model | arch | size | params | threads | test | t/s | samples |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
  std::string name = loaded->file->path();
  if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  auto row = [&](const char* test, int n, const std::vector<double>& v) {
    std::string depth = opt.n_depth > 0 ? " @ d" + std::to_string(opt.n_depth) : "";
    if (test[0] == 't' && opt.n_parallel > 1) depth += " x" + std::to_string(opt.n_parallel) + " seqs";
    std::printf("| %s | %s | %.2f MiB | %.2f M | %d | %s%d%s | %.2f | %s |\n", name.c_str(), c.arch.c_str(),
                bytes / 1048576.0, params / 1e6, threads, test, n, depth.c_str(), Median(v), fmt_samples(v).c_str());
  };
  if (opt.n_prompt > 0) row("pp", opt.n_prompt, res->pp_tokens_per_s);
  if (opt.n_gen > 0) row("tg", opt.n_gen, res->tg_tokens_per_s);
  return 0;
}

}  // namespace pagoda::cli
