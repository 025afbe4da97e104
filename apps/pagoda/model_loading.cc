#include "model_loading.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "kernels/backend.h"
#include "model/random_model.h"

namespace pagoda::cli {

Result<std::string> EnsureDemoModel() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::filesystem::path dir = ec ? std::filesystem::temp_directory_path() / "pagoda-demo"
                                 : exe.parent_path().parent_path() / "demo";
  std::filesystem::path path = dir / "demo-llama.gguf";
  if (std::filesystem::exists(path)) return path.string();
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("cannot create " + dir.string() + ": " + ec.message());
  RandomModelSpec spec;
  spec.arch = "llama";
  spec.name = "pagoda-demo (random weights)";
  spec.n_embd = 512;
  spec.n_layer = 4;
  spec.n_head = 8;
  spec.n_head_kv = 4;
  spec.n_ff = 1408;
  spec.n_vocab = 4096;
  spec.n_ctx = 2048;
  spec.weight_type = DType::kQ8_0;
  spec.seed = 42;
  std::fprintf(stderr, "pagoda: writing the demo model (random weights, its text is gibberish) to %s\n",
               path.string().c_str());
  PAGODA_RETURN_IF_ERROR(WriteRandomModel(spec, path.string()));
  return path.string();
}

void AddDecodeWeightsOption(CLI::App& app, std::string* value) {
  app.add_option("--decode-weights", *value,
                 "q4_0 or q4_k: decode tokens use a 4-bit copy of the linear weights, quantized at load from the "
                 "checkpoint's Q8_0/F16/BF16/F32 tensors (prefill keeps them); costs extra memory, printed at start");
}

Result<ModelOptions> ModelOptionsFromFlags(const std::string& decode_weights) {
  ModelOptions o;
  if (!decode_weights.empty()) {
    PAGODA_ASSIGN_OR_RETURN(DType t, ParseDecodeWeightType(decode_weights));
    o.decode_weights = t;
  }
  return o;
}

void AddDeviceOption(CLI::App& app, std::string* value) {
  app.add_option("--device", *value,
                 "cpu (default) or cuda[:N]; the CUDA forward is not enabled yet (docs/CUDA.md)");
}

Status CheckDevice(const std::string& device) {
  const Result<kernels::DeviceSpec> spec = kernels::ParseDeviceSpec(device);
  if (!spec.ok()) return spec.status().WithContext("--device");
  if (spec->kind == kernels::DeviceKind::kCpu) return Status::Ok();
  ThreadPool probe_pool(1);
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(*spec, probe_pool);
  if (!backend.ok()) return backend.status().WithContext("--device " + device);
  return FailedPrecondition("--device " + device + ": found " + (*backend)->name() +
                            ", but the model forward on CUDA is not enabled yet: its kernels have not been "
                            "validated on a GPU (docs/CUDA.md); use --device cpu");
}

Result<LoadedModel> LoadModelAndTokenizer(const std::string& path_in, ThreadPool& pool, bool need_tokenizer,
                                          const ModelOptions& options) {
  std::string path = path_in;
  if (path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(path, EnsureDemoModel());
    std::fprintf(stderr, "pagoda: no --model given: using the demo model with RANDOM weights (%s)\n", path.c_str());
  }
  auto t0 = std::chrono::steady_clock::now();
  LoadedModel out;
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  out.file = std::move(file);
  PAGODA_ASSIGN_OR_RETURN(out.model, LoadModel(out.file, pool, options));
  if (const DecodeWeightsInfo dw = out.model->decode_weights_info(); dw.type) {
    std::fprintf(stderr,
                 "pagoda: decode weights %s: %lld linear weights quantized in %.2f s, +%.1f MiB of memory "
                 "(decode reads them instead of %.1f MiB of checkpoint weights; prefill keeps those)%s\n",
                 DTypeName(*dw.type), static_cast<long long>(dw.n_tensors), dw.seconds, dw.bytes / 1048576.0,
                 dw.source_bytes / 1048576.0,
                 dw.n_kept > 0 ? ("; " + std::to_string(dw.n_kept) +
                                  " matrices with rows that are not whole blocks keep the checkpoint's").c_str()
                               : "");
  }
  if (need_tokenizer) {
    auto tok = Tokenizer::FromMetadata(out.file->metadata());
    if (!tok.ok()) return tok.status().WithContext(path);
    out.tokenizer = std::move(tok).value();
  }
  out.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace pagoda::cli
