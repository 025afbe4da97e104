// pagoda quantize: write a quantized copy of a GGUF model (model/quantize_model.h).
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "base/thread_pool.h"
#include "cli_util.h"
#include "commands.h"
#include "model/quantize_model.h"

namespace pagoda::cli {

int CmdQuantize(int argc, char** argv) {
  CLI::App app("Quantize a GGUF model's weight matrices (ggml reference rounding; norms stay F32, "
               "output.weight becomes Q6_K for 4/5-bit types)",
               "quantize");
  std::string in_path, out_path, type_name;
  int threads = DefaultThreadCount();
  app.add_option("input", in_path, "input GGUF (F32, F16, BF16 or Q8_0 weights)")->required();
  app.add_option("output", out_path, "output GGUF")->required();
  app.add_option("--type", type_name, "q8_0 | q4_0 | q4_1 | q5_0 | q4_k")->required();
  app.add_option("-t,--threads", threads, "threads (default: all cores)");
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  if (threads <= 0 || threads > 1024) return Fail("--threads must be between 1 and 1024");
  auto type = ParseQuantizeType(type_name);
  if (!type.ok()) return Fail(type.status());
  std::error_code ec;
  if (std::filesystem::equivalent(in_path, out_path, ec)) return Fail("input and output are the same file");

  ThreadPool pool(threads);
  QuantizeModelOptions opt;
  opt.type = *type;
  QuantizeModelReport rep;
  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = QuantizeModelFile(in_path, out_path, opt, pool, &rep); !s.ok()) return Fail(s);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "pagoda: wrote %s (%s): %lld tensors, %lld quantized, %.1f MiB -> %.1f MiB in %.2f s\n",
               out_path.c_str(), DTypeName(*type), static_cast<long long>(rep.n_tensors),
               static_cast<long long>(rep.n_quantized), rep.bytes_in / 1048576.0, rep.bytes_out / 1048576.0, secs);
  return 0;
}

}  // namespace pagoda::cli
