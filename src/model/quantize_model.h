// QuantizeModel: `pagoda quantize IN.gguf OUT.gguf --type T` as a library
// call. Copies every metadata key (general.file_type and
// general.quantization_version updated as llama.cpp writes them) and every
// tensor, quantizing the 2-D weight matrices with kernels/cpu/
// quantize_weights.h (ggml's reference rounding, rows over the pool):
//   - attn_{q,k,v,output}, ffn_{gate,up,down} (and any other 2-D .weight):
//     the requested type;
//   - token_embd.weight: the requested type too (llama.cpp's convention);
//   - output.weight (the LM head): Q6_K for every 4/5-bit type, Q8_0 for
//     q8_0 (llama.cpp's choice: the head is the most sensitive matrix);
//   - 1-D tensors (norms, biases, rope_freqs) and anything not 2-D: copied.
// A matrix whose rows are not whole blocks of the chosen type falls back as
// llama.cpp does (Q4_K -> Q5_0, Q6_K -> Q8_0, then F16). Sources must be
// F32, F16, BF16 or Q8_0 (already-quantized 4-6 bit inputs are refused: a
// second rounding only loses accuracy); tensors kept as they are may be of
// any type. The input is read through the mmap; the output is written via
// GgufWriter (quantized tensors held until the write).
// Thread safety: one call at a time per pool.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

namespace pagoda {

struct QuantizeModelOptions {
  DType type = DType::kQ8_0;  // Q8_0, Q4_0, Q4_1, Q5_0 or Q4_K
};

struct QuantizeModelReport {
  int64_t n_tensors = 0;
  int64_t n_quantized = 0;
  int64_t bytes_in = 0;   // tensor data
  int64_t bytes_out = 0;
};

// The --type values: "q8_0", "q4_0", "q4_1", "q5_0", "q4_k".
Result<DType> ParseQuantizeType(const std::string& name);

// The type a tensor gets in the output, or the input's type when it is
// copied. Error when the tensor would need quantizing from an unsupported
// source type.
Result<DType> QuantizedTensorType(const GgufTensorInfo& t, DType target);

// Builds the output in memory (tests) ...
Result<GgufWriter> QuantizeModel(const GgufFile& in, const QuantizeModelOptions& options, ThreadPool& pool,
                                 QuantizeModelReport* report = nullptr);
// ... or writes it to `out_path` (via a temporary file renamed into place).
Status QuantizeModelFile(const std::string& in_path, const std::string& out_path,
                         const QuantizeModelOptions& options, ThreadPool& pool,
                         QuantizeModelReport* report = nullptr);

}  // namespace pagoda
