// Loading a GGUF once for both the model and its tokenizer; the built-in demo
// model (random weights) when no --model is given.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {

struct LoadedModel {
  std::shared_ptr<const GgufFile> file;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  double load_seconds = 0;
};

// Path of the demo model, written on first use next to the binary
// (<build>/demo/demo-llama.gguf). Random weights: its text is gibberish.
Result<std::string> EnsureDemoModel();

// Opens `path` ("" = the demo model) and loads model and tokenizer. With
// options.decode_weights it prints the decode copies' memory cost to stderr.
Result<LoadedModel> LoadModelAndTokenizer(const std::string& path, ThreadPool& pool, bool need_tokenizer = true,
                                          const ModelOptions& options = {});

// --decode-weights q4_0|q4_k (serve, generate, bench, perplexity): the value
// lands in *value ("" = off); ModelOptionsFromFlags turns it into options.
void AddDecodeWeightsOption(CLI::App& app, std::string* value);
Result<ModelOptions> ModelOptionsFromFlags(const std::string& decode_weights);

// --device cpu|cuda[:N] (serve, generate, bench): the value lands in *value
// (default "cpu").
void AddDeviceOption(CLI::App& app, std::string* value);
// Whether the model can run on --device: cpu always; cuda answers why it
// cannot (no CUDA support in this build, no CUDA device, device N not
// present) and, where the device opens, that the GPU forward is not enabled
// yet (docs/CUDA.md): its kernels have not been validated on a GPU.
Status CheckDevice(const std::string& device);

}  // namespace pagoda::cli
