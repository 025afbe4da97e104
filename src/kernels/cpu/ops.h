// Element-wise and attention ops of the transformer forward pass: RMSNorm,
// LayerNorm, RoPE (adjacent-pair and NeoX orderings, per-frequency factors),
// softmax, SiLU-gated product, GELU, causal GQA attention over a (possibly
// paged) KV cache and bidirectional attention within whole sequences
// (encoders).
// Every op has a scalar *Reference twin (double accumulation) that the tests
// compare against. All buffers are borrowed; nothing here allocates per call
// except thread-local attention scratch that grows once.
// Threading: an op taking a ThreadPool& runs on it; callers are the engine
// thread only.
#pragma once

#include <bit>
#include <climits>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/thread_pool.h"

namespace pagoda::kernels {

// ---- RMSNorm ---------------------------------------------------------------
// y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, for n_rows rows of n floats
// (row stride n). w may be null (no scale). x and y may alias.
void RmsNorm(const float* x, const float* w, float eps, int64_t n_rows, int64_t n, float* y);
void RmsNormReference(const float* x, const float* w, float eps, int64_t n_rows, int64_t n, float* y);

// ---- LayerNorm -------------------------------------------------------------
// y[r] = (x[r] - mean(x[r])) / sqrt(var(x[r]) + eps) * w + b (ggml_norm then
// the weight and bias), for n_rows rows of n floats (row stride n); var is the
// biased (1/n) variance. w and b may be null. x and y may alias.
void LayerNorm(const float* x, const float* w, const float* b, float eps, int64_t n_rows, int64_t n,
               float* y);
void LayerNormReference(const float* x, const float* w, const float* b, float eps, int64_t n_rows,
                        int64_t n, float* y);

// ---- RoPE ------------------------------------------------------------------
// Rotation angle of pair i (i < n_rot/2) at position p:
//   theta_i = p * freq_scale * base^(-2i/n_rot) / freq_factors[i]
// freq_scale = 1/factor for linear scaling; freq_factors (Llama-3 style
// rope_freqs.weight) may be null. Writes inv_freq[n_rot/2].
void RopeInvFreq(double base, int n_rot, double freq_scale, const float* freq_factors,
                 double* inv_freq);

// YaRN (ggml's rope_yarn with ext_factor 1): pair i's frequency is
// base^(-2i/n_rot) * (freq_scale * (1 - mix_i) + mix_i), mix_i ramping from 1
// to 0 between the correction dims of beta_fast and beta_slow rotations in
// n_ctx_orig positions. The magnitude correction (mscale) is left to the
// attention scale.
void RopeYarnInvFreq(double base, int n_rot, double freq_scale, int64_t n_ctx_orig, double beta_fast,
                     double beta_slow, double* inv_freq);

// cos/sin tables for n_tokens positions: cos[t * n_half + i] = cos(pos[t] * inv_freq[i]).
// Computed once per step and shared by all layers and heads.
void RopeTables(const double* inv_freq, int n_half, const int32_t* pos, int64_t n_tokens,
                float* cos, float* sin);

// Rotates the first n_rot dims of each of n_heads heads (head_dim floats each,
// contiguous) in n_tokens rows of row_stride floats, in place.
// neox=false: pairs (2i, 2i+1) (GPT-J / Llama GGUF); neox=true: pairs (i, i + n_rot/2).
void Rope(float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim, int n_rot,
          bool neox, const float* cos, const float* sin);
void RopeReference(float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim,
                   int n_rot, bool neox, const int32_t* pos, double base, double freq_scale,
                   const float* freq_factors);

// ---- Softmax / activation --------------------------------------------------
// In place over one row of n floats (n >= 1).
void Softmax(float* x, int64_t n);
void SoftmaxReference(float* x, int64_t n);

// out[i] = silu(gate[i]) * up[i]; out may alias gate or up.
void SiluMul(const float* gate, const float* up, int64_t n, float* out);
void SiluMulReference(const float* gate, const float* up, int64_t n, float* out);

// out[i] = gelu(x[i]) in the tanh form ggml_gelu uses (llama.cpp's bert FFN):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); not the erf form. out may
// alias x.
void Gelu(const float* x, int64_t n, float* out);
void GeluReference(const float* x, int64_t n, float* out);

// ---- Attention ---------------------------------------------------------------
// Element type of the K/V a cache stores. A property of the cache and its
// views, never of the model: the model hands float rows to the cache, which
// converts them (StoreKvRow / StoreKvRowQuantized), and the attention kernel
// reads what the view says, dequantizing on the fly. See docs/KV_CACHE.md.
enum class KvType : uint8_t {
  kF32,
  kF16,      // IEEE binary16, round to nearest even; llama.cpp's default cache type
  kBf16,     // bfloat16 (top half of an f32), round to nearest even
  kFp8E4M3,  // OCP FP8 E4M3 ("e4m3fn": no inf, max 448) times a per-(position, head) scale
  kInt8,     // signed int8 in [-127, 127] times a per-(position, head) scale
};
inline constexpr int64_t KvTypeSize(KvType t) {
  return t == KvType::kF32 ? 4 : (t == KvType::kF16 || t == KvType::kBf16) ? 2 : 1;
}
// Types stored as code * scale with one scale per (position, kv head).
inline constexpr bool KvTypeHasScales(KvType t) { return t == KvType::kFp8E4M3 || t == KvType::kInt8; }
// A scale is a power of two kept as one E8M0 byte (the OCP MX scale format):
// byte e stands for 2^(e - 127); 0 stands for 0 (an all-zero row). Every
// stored value is a function of its own row alone, never of what else was
// written or when (docs/KV_CACHE.md, "Values independent of history").
inline float KvScaleValue(uint8_t e) { return std::bit_cast<float>(static_cast<uint32_t>(e) << 23); }
const char* KvTypeName(KvType t);                  // "f32", "f16", "bf16", "fp8_e4m3", "int8"
std::optional<KvType> ParseKvType(std::string_view name);  // case-insensitive; also "fp8"
// "f16|bf16|fp8_e4m3|int8|f32": for flag help and error messages.
const char* KvTypeChoices();

// Converts n floats to `type` into dst, for the unscaled types (f32, f16,
// bf16; f16: round to nearest even, as vcvtps2ph; overflow gives inf).
void StoreKvRow(const float* src, int64_t n, KvType type, void* dst);

// Stores one position's row of n_heads heads (head_dim floats each,
// contiguous) in a scaled type (fp8_e4m3, int8): head h's codes at
// codes + h * head_dim, its scale byte (KvScaleValue) at scales[h * scale_stride].
// The scale is the smallest power of two the head row fits under (KvScaleByte
// in kv_quant.h), so the stored values depend on the row alone.
void StoreKvRowQuantized(const float* src, int n_heads, int head_dim, KvType type, uint8_t* codes,
                         uint8_t* scales, int64_t scale_stride);

// Converts n elements of `type` at src back to floats (scaled types: times
// `scale`, a KvScaleValue); what the attention kernel reads, on the active ISA.
void LoadKvRow(const void* src, int64_t n, KvType type, float scale, float* dst);

// The K/V of one sequence in one layer, as a list of blocks of block_size
// positions. Position p lives in block p / block_size at slot s = p % block_size;
// head h of it starts at element s * pos_stride + h * head_stride of blocks[b],
// whose elements are of `type` (strides count elements, not bytes).
// A contiguous cache is one block (scaled types: blocks of kKvScaleGroup);
// a paged cache passes its block table.
// Scaled types: element = code * KvScaleValue(k_scales[b][h * block_size + s])
// (v_scales for V): one scale byte per (position, head), head-major per block.
// Every position is read as stored, the step's own positions included, so
// what a position contributes never depends on which step computed it.
struct KvView {
  KvType type = KvType::kF32;
  const void* const* k_blocks = nullptr;
  const void* const* v_blocks = nullptr;
  int32_t block_size = 0;
  int64_t k_pos_stride = 0;
  int64_t k_head_stride = 0;
  int64_t v_pos_stride = 0;
  int64_t v_head_stride = 0;
  const uint8_t* const* k_scales = nullptr;  // [n_blocks][n_head_kv * block_size], scaled types only
  const uint8_t* const* v_scales = nullptr;
};

// Positions per block of a contiguous cache's view in a scaled type (a paged
// cache uses its block size).
inline constexpr int32_t kKvScaleGroup = 16;

struct AttentionShape {
  int n_head = 0;
  int n_head_kv = 0;   // n_head % n_head_kv == 0 (GQA groups)
  int head_dim_k = 0;  // q and k
  int head_dim_v = 0;
  float scale = 0.0f;  // usually 1/sqrt(head_dim_k)
};

// The query rows of one sequence within a batch: rows[i] indexes q/out/positions.
struct AttentionSeq {
  KvView kv;
  const int32_t* rows = nullptr;
  int32_t n_rows = 0;
};

// Causal attention: the query in batch row r (position positions[r]) attends to
// cache positions [0, positions[r]] of its sequence, which must all be written.
// All sequences' views must have the same type. bf16 / fp8 / int8 caches are
// dequantized in the kernel (f32 query, online softmax in f32). With an f16 cache the query is
// rounded to f16 before Q*K and the normalised softmax weights P are rounded
// to f16 before P*V, with f32 accumulation: that is what ggml's CPU non-flash
// attention does over an f16 cache (its mul_mat converts the f32 operand to
// the f16 operand's type), so results match llama.cpp references.
//   q:   [n_rows_total, n_head * head_dim_k], row stride q_stride
//   out: [n_rows_total, n_head * head_dim_v], row stride out_stride
// Work is split over (sequence, kv head, query tile) across the pool.
void Attention(const AttentionShape& shape, const float* q, int64_t q_stride,
               const int32_t* positions, const AttentionSeq* seqs, int n_seqs, float* out,
               int64_t out_stride, ThreadPool& pool);
void AttentionReference(const AttentionShape& shape, const float* q, int64_t q_stride,
                        const int32_t* positions, const AttentionSeq* seqs, int n_seqs,
                        float* out, int64_t out_stride);

// ---- Bidirectional attention (encoders) -------------------------------------
// One whole sequence of a batch: its rows (indices into q / k / v / out) in
// position order, rows[j] holding position j. Every query attends to every
// key of its own sequence; nothing is cached.
struct DenseSeq {
  const int32_t* rows = nullptr;
  int32_t n_rows = 0;
};

// Multi-head attention without a mask (bert): for each sequence, head h of
// query row rows[i] attends to keys rows[0..n) of KV head h / (n_head /
// n_head_kv). f32 throughout; each (sequence, head) is computed alone and
// sums over keys in position order, so a sequence's output does not depend on
// the other sequences of the batch or on the thread count.
//   q: [rows, n_head * head_dim_k] stride q_stride; k: [rows, n_head_kv *
//   head_dim_k] stride k_stride; v: [rows, n_head_kv * head_dim_v] stride
//   v_stride; out: [rows, n_head * head_dim_v] stride out_stride.
void BidirectionalAttention(const AttentionShape& shape, const float* q, int64_t q_stride, const float* k,
                            int64_t k_stride, const float* v, int64_t v_stride, const DenseSeq* seqs,
                            int n_seqs, float* out, int64_t out_stride, ThreadPool& pool);
void BidirectionalAttentionReference(const AttentionShape& shape, const float* q, int64_t q_stride,
                                     const float* k, int64_t k_stride, const float* v, int64_t v_stride,
                                     const DenseSeq* seqs, int n_seqs, float* out, int64_t out_stride);

}  // namespace pagoda::kernels
