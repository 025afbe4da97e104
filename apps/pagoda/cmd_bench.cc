// pagoda bench: llama-bench-style pp/tg throughput, each figure with its bound
// beside it: the CPU and the kernel paths before the table, the memory
// bandwidth bound of tg and the GOP/s of pp in the table. `--membw` measures
// the machine's read bandwidth alone (no model).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "base/compute_peak.h"
#include "base/cpu_info.h"
#include "base/mem_bandwidth.h"
#include "base/thread_pool.h"
#include "cli_util.h"
#include "commands.h"
#include "engine/speed_bench.h"
#include "kernels/cpu/matmul.h"
#include "model_loading.h"

namespace pagoda::cli {
namespace {

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// "cpu:" and "isa:" lines: the machine and the ISA the kernels dispatch to.
void PrintMachine() {
  const CpuInfo cpu = ReadCpuInfo();
  std::printf("cpu: %s\n", CpuSummary(cpu).c_str());
  std::string isa = cpu.isa_present.empty() && cpu.isa_absent.empty() ? "flags unknown" : Join(cpu.isa_present);
  if (!cpu.isa_absent.empty()) isa += " (absent: " + Join(cpu.isa_absent) + ")";
  std::string active = kernels::IsaName(kernels::ActiveIsa());
  if (kernels::ActiveIsa() != kernels::DetectedIsa()) {
    active += std::string(" (detected ") + kernels::IsaName(kernels::DetectedIsa()) + ")";
  }
  if (const char* env = std::getenv("PAGODA_ISA")) active += std::string(", PAGODA_ISA=") + env;
  if (kernels::ActiveBatchPath() != kernels::BatchPath::kAuto) {
    active += std::string(", PAGODA_BATCH_PATH=") + kernels::BatchPathName(kernels::ActiveBatchPath());
  }
  std::printf("isa: %s; kernels dispatch to %s\n", isa.c_str(), active.c_str());
}

Result<MemBandwidth> Measure(int threads, int passes) {
  ThreadPool pool(threads);
  MemBandwidthOptions o;
  o.passes = passes;
  return MeasureReadBandwidth(pool, o);
}

// --membw: read bandwidth with 1 and with `threads` threads.
int RunMembw(int threads, int passes) {
  PrintMachine();
  std::printf("| test | threads | buffer | passes | best GB/s | median GB/s |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  const std::vector<int> counts = threads == 1 ? std::vector<int>{1} : std::vector<int>{1, threads};
  for (int t : counts) {
    auto bw = Measure(t, passes);
    if (!bw.ok()) return Fail(bw.status());
    std::printf("| membw | %d | %.2f GiB | %d | %.2f | %.2f |\n", t, bw->bytes / 1073741824.0, passes,
                bw->bytes_per_s / 1e9, bw->median_bytes_per_s / 1e9);
  }
  return 0;
}

// "kernels:" lines: the MatMul kernel of each weight group for one tg step
// (n_parallel tokens) and for the pp batch (n_prompt tokens; the LM head
// computes the last token's logits only). With
// --decode-weights, tg reads the decode copies of the groups that have them.
void PrintKernelPaths(const LinearWeights& lw, const SpeedBenchOptions& opt) {
  const int64_t n_tg = opt.n_parallel, n_pp = opt.n_prompt;
  auto path = [](const char* test, int64_t n, DType type, bool packed) {
    return std::string(test) + " (" + std::to_string(n) + " tok) " + kernels::PlanName(type, n, packed);
  };
  for (const auto& g : lw.groups) {
    const bool copied = lw.decode_type && CanSupplyDecodeWeights(g.type);
    std::string paths = copied ? "tg (decode copy)" : path("tg", n_tg, g.type, g.packed);
    if (n_pp > 0) paths += ", " + path("pp", g.head ? 1 : n_pp, g.type, g.packed);
    std::printf("kernels: %s%s%s (%lld tensors, %.1f MiB): %s\n", DTypeName(g.type), g.packed ? " packed" : "",
                g.head ? " LM head" : "", static_cast<long long>(g.n_tensors), g.bytes / 1048576.0, paths.c_str());
  }
  if (lw.decode_type) {
    std::printf("kernels: decode copy %s%s: %s\n", DTypeName(*lw.decode_type), lw.decode_packed ? " packed" : "",
                path("tg", n_tg, *lw.decode_type, lw.decode_packed).c_str());
  }
}

// pp: achieved GOP/s, 2 x linear-weight params per token (attention left out),
// and, where the kernels run the AVX2 code the peak was measured with, its
// share of that peak: the f32 FMA peak when most prefill weight bytes are
// F16/BF16/F32 (dequantized to f32 tiles), else the vpmaddubsw one.
std::string PpBound(const LinearWeights& lw, const std::optional<ComputePeak>& peak, double tps) {
  const double ops = 2.0 * lw.prefill_params * tps;
  char buf[160];
  int n = std::snprintf(buf, sizeof buf, "%.1f GOP/s", ops / 1e9);
  if (!peak || peak->f32_fma_flops <= 0 || kernels::ActiveIsa() != kernels::Isa::kAvx2) return buf;
  int64_t float_bytes = 0, total = 0;
  for (const auto& g : lw.groups) {
    if (g.head) continue;
    total += g.bytes;
    if (g.type == DType::kF16 || g.type == DType::kBF16 || g.type == DType::kF32) float_bytes += g.bytes;
  }
  const bool fp = 2 * float_bytes > total;
  const double p = fp ? peak->f32_fma_flops : peak->int8_ops;
  std::snprintf(buf + n, sizeof buf - n, ", %.0f %% of the %s peak", 100.0 * ops / p, fp ? "f32 FMA" : "int8");
  return buf;
}

// tg: the share of the bandwidth bound reached, the bound, and what it rests on.
// MoE models: the bound from the active bytes per token (expert_used_count
// experts per token) and, measured, from the union of the experts each step
// selected (what batched decode reads).
std::string TgBound(const LinearWeights& lw, const Model& model, const SpeedBenchOptions& opt,
                    const std::optional<MemBandwidth>& bw, const SpeedBenchResult& res, double tps) {
  if (!bw) return "-";
  const double per_tok = TgBytesPerToken(lw.decode_bytes, model.kv_cache_spec(), opt.kv_type, opt);
  const double limit = bw->bytes_per_s / per_tok;
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "%.0f %% of %.1f t/s (%.4f GB/tok%s at %.2f GB/s)", 100.0 * tps / limit,
                        limit, per_tok / 1e9, lw.expert_decode_bytes > 0 ? " active" : "", bw->bytes_per_s / 1e9);
  if (lw.expert_decode_bytes > 0 && res.tg_expert_bytes_per_step > 0) {
    const double step_weights = lw.decode_bytes - lw.expert_decode_bytes + res.tg_expert_bytes_per_step;
    const double union_tok = TgBytesPerToken(step_weights, model.kv_cache_spec(), opt.kv_type, opt);
    const double union_limit = bw->bytes_per_s / union_tok;
    std::snprintf(buf + n, sizeof buf - n, "; %.0f %% of %.1f t/s from the experts selected (%.4f GB/tok)",
                  100.0 * tps / union_limit, union_limit, union_tok / 1e9);
  }
  return buf;
}

// The llama-bench table, with the bound column.
void PrintTable(const LoadedModel& loaded, const SpeedBenchOptions& opt, int threads, const LinearWeights& lw,
                const std::optional<MemBandwidth>& bw, const std::optional<ComputePeak>& peak,
                const SpeedBenchResult& res) {
  uint64_t bytes = 0, params = 0;
  for (const auto& t : loaded.file->tensors()) {
    bytes += static_cast<uint64_t>(t.nbytes);
    params += static_cast<uint64_t>(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]);
  }
  auto fmt_samples = [](const std::vector<double>& v) {
    std::string s;
    char buf[32];
    for (double x : v) {
      std::snprintf(buf, sizeof buf, "%s%.2f", s.empty() ? "" : ", ", x);
      s += buf;
    }
    return s;
  };
  if (lw.active_params < lw.total_params * 0.99) {
    std::printf("params: %.2f B total, %.2f B active per token\n", lw.total_params / 1e9, lw.active_params / 1e9);
  }
  std::printf("| model | arch | size | params | threads | test | t/s | samples | bound |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
  std::string name = loaded.file->path();
  if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  const std::string& arch = loaded.model->config().arch;
  auto row = [&](bool tg, int n, const std::vector<double>& v) {
    std::string depth = opt.n_depth > 0 ? " @ d" + std::to_string(opt.n_depth) : "";
    if (tg && opt.n_parallel > 1) depth += " x" + std::to_string(opt.n_parallel) + " seqs";
    const double tps = Median(v);
    const std::string bound = tg ? TgBound(lw, *loaded.model, opt, bw, res, tps) : PpBound(lw, peak, tps);
    std::printf("| %s | %s | %.2f MiB | %.2f M | %d | %s%d%s | %.2f | %s | %s |\n", name.c_str(), arch.c_str(),
                bytes / 1048576.0, params / 1e6, threads, tg ? "tg" : "pp", n, depth.c_str(), tps,
                fmt_samples(v).c_str(), bound.c_str());
  };
  if (opt.n_prompt > 0) row(false, opt.n_prompt, res.pp_tokens_per_s);
  if (opt.n_gen > 0) row(true, opt.n_gen, res.tg_tokens_per_s);
}

}  // namespace

int CmdBench(int argc, char** argv) {
  CLI::App app("Prompt-processing (ppN) and generation (tgN) speed, llama-bench style", "bench");
  std::string model_path;
  SpeedBenchOptions opt;
  int threads = DefaultThreadCount();
  std::string kv_type = "f16";
  bool membw_only = false;
  int membw_passes = 10;
  auto* model_opt = app.add_option("-m,--model", model_path, "GGUF model (default: the demo model)");
  app.add_option("-p,--n-prompt", opt.n_prompt, "prompt tokens for pp (0 skips)");
  app.add_option("-n,--n-gen", opt.n_gen, "generated tokens for tg (0 skips)");
  app.add_option("-r,--repetitions", opt.repetitions, "repetitions (median reported)");
  app.add_option("-t,--threads", threads, "threads (default: all cores)");
  app.add_option("--parallel", opt.n_parallel,
                 "sequences decoded at once in tg: each step is one batch of this many tokens; t/s is the aggregate");
  app.add_option("--kv-cache-dtype,--kv-type", kv_type,
                 std::string("KV cache element type: ") + kernels::KvTypeChoices() + " (default f16)");
  app.add_option("-d,--n-depth", opt.n_depth, "context already in the KV cache before each pp / tg run");
  app.add_flag("--membw", membw_only,
               "only measure the memory read bandwidth (1 GiB summed with vector loads, best of --membw-passes) "
               "with 1 and -t threads; no model")
      ->excludes(model_opt);
  app.add_option("--membw-passes", membw_passes,
                 "timed passes over 1 GiB for the bandwidth (default 10, ~1 s); with a model it gives the tg bound "
                 "column, measured before loading (and the measured compute peak gives pp's); 0 skips both")
      ->check(CLI::Range(0, 1000));
  std::string decode_weights;
  AddDecodeWeightsOption(app, &decode_weights);
  std::string mla = "absorbed";
  app.add_option("--mla", mla, "MLA models: absorbed attention over the latent cache (default) or decompress "
                               "the latents into per-head K/V each step (to compare)")
      ->check(CLI::IsMember({"absorbed", "decompress"}));
  std::string device = "cpu";
  AddDeviceOption(app, &device);
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  if (Status s = CheckDevice(device); !s.ok()) return Fail(s);
  if (threads <= 0 || threads > 1024) return Fail("--threads must be between 1 and 1024");
  if (membw_only) {
    if (membw_passes == 0) return Fail("--membw needs --membw-passes of at least 1");
    return RunMembw(threads, membw_passes);
  }
  auto model_options = ModelOptionsFromFlags(decode_weights);
  if (!model_options.ok()) return Fail(model_options.status());
  model_options->mla_decompress = mla == "decompress";
  const auto parsed_kv = kernels::ParseKvType(kv_type);
  if (!parsed_kv) {
    return Fail("--kv-cache-dtype: unknown type '" + kv_type + "' (expected " + kernels::KvTypeChoices() + ")");
  }
  opt.kv_type = *parsed_kv;
  if (opt.n_prompt < 0 || opt.n_gen < 0 || opt.repetitions <= 0 || opt.n_prompt > 1 << 20 || opt.n_gen > 1 << 20 ||
      opt.n_depth < 0 || opt.n_depth > 1 << 20) {
    return Fail("-p, -n and -d must be in [0, 1048576] and -r positive");
  }
  if (opt.n_parallel <= 0 || opt.n_parallel > 4096) return Fail("--parallel must be between 1 and 4096");

  PrintMachine();
  ThreadPool pool(threads);
  std::optional<MemBandwidth> bw;
  if (membw_passes > 0 && opt.n_gen > 0) {
    MemBandwidthOptions bo;
    bo.passes = membw_passes;
    auto m = MeasureReadBandwidth(pool, bo);
    if (!m.ok()) return Fail(m.status());
    bw = *m;
    std::printf("membw: %.2f GB/s read with %d threads (1 GiB, best of %d passes; median %.2f)\n",
                bw->bytes_per_s / 1e9, threads, membw_passes, bw->median_bytes_per_s / 1e9);
  }
  std::optional<ComputePeak> peak;
  if (membw_passes > 0 && opt.n_prompt > 0) {
    peak = MeasureComputePeak(pool);
    if (peak->f32_fma_flops > 0) {
      std::printf("peak: f32 FMA %.1f GFLOP/s, int8 (vpmaddubsw) %.1f GOP/s with %d threads (AVX2, measured)\n",
                  peak->f32_fma_flops / 1e9, peak->int8_ops / 1e9, threads);
    }
  }
  auto loaded = LoadModelAndTokenizer(model_path, pool, /*need_tokenizer=*/false, *model_options);
  if (!loaded.ok()) return Fail(loaded.status());
  std::fprintf(stderr, "pagoda: loaded %s in %.3f s; KV cache %s\n", loaded->file->path().c_str(),
               loaded->load_seconds, kv_type.c_str());
  const LinearWeights lw = CountLinearWeights(*loaded->file, loaded->model->decode_weights_info());
  PrintKernelPaths(lw, opt);
  std::fflush(stdout);
  auto res = RunSpeedBench(*loaded->model, opt);
  if (!res.ok()) return Fail(res.status());

  PrintTable(*loaded, opt, threads, lw, bw, peak, *res);
  return 0;
}

}  // namespace pagoda::cli
