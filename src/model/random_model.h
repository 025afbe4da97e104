// Random-weight model builder: writes a GGUF with llama.cpp's tensor names,
// shapes (ggml order, ne[0] contiguous) and metadata keys for the dense
// "llama", "qwen2" (Q/K/V biases) and "qwen3" (per-head Q/K RMSNorm)
// architectures, with weights drawn deterministically from a seed. Used by
// `pagoda make-model`, the demo model of `pagoda generate`, tests and
// benchmarks (shapes of real models without their weights).
//
// Weights are N(0, sigma) with sigma scaled by 1/sqrt(fan-in) from values
// that keep a tiny model's activations and next-token distribution
// non-degenerate at any width (see /work/shared/testdata/synthetic/README.md
// for the n_embd 128 originals); norm weights are 1 + N(0, 0.1). Each tensor
// row has its own random stream derived from (seed, tensor name, row), so the
// bytes do not depend on the thread count, and a tensor does not change when
// another is added. Normals come from a 65536-entry inverse-CDF table (tails
// cut at about 4.3 sigma): fast enough for a 1B model in seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

namespace pagoda {

struct RandomModelSpec {
  std::string arch = "llama";  // "llama" | "qwen2" | "qwen3"
  std::string name = "pagoda-random";  // general.name
  int n_embd = 256;
  int n_layer = 2;
  int n_head = 4;
  int n_head_kv = 4;
  int head_dim = 0;   // 0 = n_embd / n_head
  int n_ff = 512;
  int n_vocab = 0;    // 0 = the size of `tokenizer`'s vocabulary
  int n_ctx = 2048;   // <arch>.context_length
  bool tied_output = false;  // no output.weight: token_embd is the LM head
  float rope_base = 10000.0f;
  // Informational: the RoPE pairing is implied by the architecture (qwen2 and
  // qwen3 use NeoX, llama does not); nothing in the file records it.
  bool rope_neox = false;
  float rms_eps = 1e-5f;
  // Llama-3-style per-frequency divisors, written as the F32 tensor
  // rope_freqs.weight [head_dim / 2]; empty = none.
  std::vector<float> rope_freq_factors;
  DType weight_type = DType::kF16;       // matrices and token_embd
  std::optional<DType> output_type;      // output.weight; default weight_type
  uint64_t seed = 0;
  // tokenizer.* keys are copied from here (e.g. the metadata of another
  // GGUF). Without tokenizer.ggml.tokens a synthetic SPM vocabulary of
  // n_vocab tokens is generated (synthetic_vocab.h) and only the keys it
  // does not define (a chat template, say) are taken from here.
  GgufMetadata tokenizer;
  int n_threads = 0;  // 0 = hardware concurrency; never changes the bytes
};

// Checks the spec: known arch, positive sizes, head counts that divide,
// row lengths that are multiples of the chosen types' block sizes, and a
// vocabulary size consistent with the tokenizer metadata.
Status ValidateRandomModelSpec(const RandomModelSpec& spec);

// Builds the whole model in memory (the writer then holds every tensor).
Result<GgufWriter> BuildRandomModel(const RandomModelSpec& spec);

// BuildRandomModel + GgufWriter::Write.
Status WriteRandomModel(const RandomModelSpec& spec, const std::string& path);

}  // namespace pagoda
