#include "model_loading.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

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

Result<LoadedModel> LoadModelAndTokenizer(const std::string& path_in, ThreadPool& pool, bool need_tokenizer) {
  std::string path = path_in;
  if (path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(path, EnsureDemoModel());
    std::fprintf(stderr, "pagoda: no --model given: using the demo model with RANDOM weights (%s)\n", path.c_str());
  }
  auto t0 = std::chrono::steady_clock::now();
  LoadedModel out;
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  out.file = std::move(file);
  PAGODA_ASSIGN_OR_RETURN(out.model, LoadModel(out.file, pool));
  if (need_tokenizer) {
    auto tok = Tokenizer::FromMetadata(out.file->metadata());
    if (!tok.ok()) return tok.status().WithContext(path);
    out.tokenizer = std::move(tok).value();
  }
  out.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace pagoda::cli
