// pagoda make-model: write a random-weight model (tests, benchmarks).
#include <cstdio>

#include "cli_util.h"
#include "commands.h"
#include "gguf/gguf_file.h"
#include "model/random_model.h"

namespace pagoda::cli {

int CmdMakeModel(int argc, char** argv) {
  CLI::App app("Write a random-weight model of a given architecture, shape and tensor type", "make-model");
  RandomModelSpec spec;
  std::string out, type = "f16", output_type, vocab_from;
  spec.n_embd = 2048;
  spec.n_layer = 16;
  spec.n_head = 32;
  spec.n_head_kv = 8;
  spec.n_ff = 8192;
  spec.n_vocab = 32000;
  spec.n_ctx = 4096;
  app.add_option("-o,--output", out, "output GGUF path")->required();
  app.add_option("--arch", spec.arch, "llama | qwen2 | qwen3");
  app.add_option("--type", type, "weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q4_k q5_k q6_k");
  app.add_option("--output-type", output_type, "type of output.weight (default: --type)");
  app.add_option("--n-embd", spec.n_embd, "embedding size");
  app.add_option("--n-layer", spec.n_layer, "layers");
  app.add_option("--n-head", spec.n_head, "attention heads");
  app.add_option("--n-head-kv", spec.n_head_kv, "KV heads");
  app.add_option("--head-dim", spec.head_dim, "head dimension (default n_embd / n_head)");
  app.add_option("--n-ff", spec.n_ff, "FFN width");
  app.add_option("--n-vocab", spec.n_vocab, "vocabulary size (synthetic vocab) ");
  app.add_option("--n-ctx", spec.n_ctx, "training context length");
  app.add_option("--rope-base", spec.rope_base, "RoPE base");
  app.add_flag("--tied", spec.tied_output, "tie the output projection to token_embd");
  app.add_option("--vocab-from", vocab_from, "copy tokenizer.* metadata from this GGUF");
  app.add_option("--seed", spec.seed, "RNG seed");
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;

  auto t = ParseDType(type);
  if (!t) return Fail("unknown --type '" + type + "'");
  spec.weight_type = *t;
  if (!output_type.empty()) {
    auto ot = ParseDType(output_type);
    if (!ot) return Fail("unknown --output-type '" + output_type + "'");
    spec.output_type = *ot;
  }
  if (!vocab_from.empty()) {
    auto f = GgufFile::Open(vocab_from);
    if (!f.ok()) return Fail(f.status());
    for (const auto& [k, v] : (*f)->metadata().entries()) {
      if (k.rfind("tokenizer.", 0) == 0) spec.tokenizer.Set(k, v);
    }
    if (!spec.tokenizer.Has("tokenizer.ggml.tokens")) return Fail(vocab_from + ": no tokenizer.ggml.tokens");
    spec.n_vocab = 0;  // the vocab file decides
  }
  if (Status s = WriteRandomModel(spec, out); !s.ok()) return Fail(s);
  std::fprintf(stderr, "pagoda: wrote %s (random weights)\n", out.c_str());
  return 0;
}

}  // namespace pagoda::cli
