#include "model/random_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string_view>
#include <thread>

#include "kernels/cpu/quantize.h"
#include "kernels/cpu/quantize_weights.h"
#include "model/random_model_plan.h"
#include "model/synthetic_vocab.h"

namespace pagoda {
namespace {

using random_model::Derive;
using random_model::TensorPlan;
using random_model::TokenizerVocabSize;
using random_model::VocabSize;

constexpr int kMaxDim = 1 << 20;
constexpr int kMaxLayers = 4096;
constexpr int kMaxVocab = 1 << 23;

uint64_t SplitMix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t Mix(uint64_t x) { return SplitMix64(&x); }

uint64_t TensorSeed(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return Mix(seed ^ Mix(h));
}

// Acklam's rational approximation of the standard normal quantile
// (relative error < 1.2e-9), evaluated once per table entry.
double NormalQuantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425;
  if (p < lo || p > 1 - lo) {
    const double q = std::sqrt(-2 * std::log(p < lo ? p : 1 - p));
    const double x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
                     ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    return p < lo ? x : -x;
  }
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// Entry i is the normal quantile at (i + 0.5) / 65536: a 16-bit uniform
// index gives an (almost) standard normal.
const std::array<float, 65536>& NormalTable() {
  static const std::array<float, 65536> table = [] {
    std::array<float, 65536> t{};
    for (size_t i = 0; i < t.size(); ++i) t[i] = float(NormalQuantile((i + 0.5) / 65536.0));
    return t;
  }();
  return table;
}

// Calls f(i, k) for i in [0, n) with k a uniform 16-bit index into
// NormalTable(), from the row's own stream (four indices per 64-bit draw).
template <class F>
void ForEachNormalIndex(uint64_t tensor_seed, int64_t row, int64_t n, F&& f) {
  uint64_t state = tensor_seed ^ Mix(uint64_t(row) + 1);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint64_t r = SplitMix64(&state);
    f(i + 0, r & 0xffff);
    f(i + 1, (r >> 16) & 0xffff);
    f(i + 2, (r >> 32) & 0xffff);
    f(i + 3, r >> 48);
  }
  for (uint64_t r = SplitMix64(&state); i < n; ++i, r >>= 16) f(i, r & 0xffff);
}

// The 65536 possible values of a tensor, mean + sigma * NormalTable().
std::vector<float> ValueTable(const TensorPlan& t) {
  const std::array<float, 65536>& normal = NormalTable();
  std::vector<float> v(normal.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.mean + t.sigma * normal[i];
  return v;
}

// Quantizes rows [r0, r1) of a random tensor into dst (the weight quantizers
// `pagoda quantize` uses: ggml's reference rounding).
Status FillRows(const TensorPlan& t, const std::vector<float>& values, uint64_t tseed, int64_t r0,
                int64_t r1, uint8_t* dst) {
  const int64_t n = t.ne[0];
  const int64_t row_bytes = RowBytes(t.type, n);
  std::vector<float> row(n);
  for (int64_t r = r0; r < r1; ++r) {
    ForEachNormalIndex(tseed, r, n, [&](int64_t i, uint64_t k) { row[i] = values[k]; });
    PAGODA_RETURN_IF_ERROR(kernels::QuantizeWeightRow(t.type, row.data(), dst + r * row_bytes, n));
  }
  return Status::Ok();
}

// Element-wise types (F32, F16, BF16): every value is pre-encoded once with
// QuantizeRow, so a row is a table lookup per element; the bytes equal
// FillRows' exactly.
template <class E>
void FillEncodedRows(const TensorPlan& t, const std::vector<E>& encoded, uint64_t tseed,
                     int64_t r0, int64_t r1, uint8_t* dst) {
  const int64_t n = t.ne[0];
  E* out = reinterpret_cast<E*>(dst);
  for (int64_t r = r0; r < r1; ++r) {
    E* row = out + r * n;
    ForEachNormalIndex(tseed, r, n, [&](int64_t i, uint64_t k) { row[i] = encoded[k]; });
  }
}

template <class E>
Result<std::vector<E>> Encode(DType type, const std::vector<float>& values) {
  std::vector<E> e(values.size());
  PAGODA_RETURN_IF_ERROR(kernels::QuantizeRow(type, values.data(), e.data(), int64_t(values.size())));
  return e;
}

// Runs fn(r0, r1) over [0, n_rows) split between nth threads.
Status ParallelRows(int64_t n_rows, int nth, const std::function<Status(int64_t, int64_t)>& fn) {
  if (nth <= 1) return fn(0, n_rows);
  std::vector<Status> st(nth);
  std::vector<std::thread> threads;
  for (int i = 0; i < nth; ++i) {
    threads.emplace_back([&, i] { st[i] = fn(n_rows * i / nth, n_rows * (i + 1) / nth); });
  }
  for (std::thread& th : threads) th.join();
  for (const Status& s : st) PAGODA_RETURN_IF_ERROR(s);
  return Status::Ok();
}

// Derived tensors (random_model_plan.h): each row is assembled as floats
// from the rows of the drawn source tensors, then encoded.
Status FillDerivedRows(const TensorPlan& t, uint64_t seed, int nth, uint8_t* dst) {
  struct Source {
    std::vector<float> values;
    uint64_t tseed;
  };
  std::vector<Source> src;
  for (const TensorPlan& p : t.sources) src.push_back({ValueTable(p), TensorSeed(seed, p.name)});
  auto drawn_row = [&](size_t i, int64_t r, float* out) {
    ForEachNormalIndex(src[i].tseed, r, t.sources[i].ne[0], [&](int64_t j, uint64_t k) { out[j] = src[i].values[k]; });
  };
  const int64_t n = t.ne[0], row_bytes = RowBytes(t.type, n);
  auto encode_rows = [&](const std::function<void(int64_t, float*)>& make_row) {
    return ParallelRows(t.rows(), nth, [&](int64_t r0, int64_t r1) {
      std::vector<float> row(n);
      for (int64_t r = r0; r < r1; ++r) {
        make_row(r, row.data());
        PAGODA_RETURN_IF_ERROR(kernels::QuantizeWeightRow(t.type, row.data(), dst + r * row_bytes, n));
      }
      return Status::Ok();
    });
  };
  if (t.derive == Derive::kGateUp) {
    // [n_embd, 2 F, n_expert]: expert e's gate rows, then its up rows.
    const int64_t f = t.dim_a;
    return encode_rows([&](int64_t r, float* out) {
      const int64_t e = r / (2 * f), j = r % (2 * f);
      drawn_row(j < f ? 0 : 1, e * f + j % f, out);
    });
  }
  // attn_kv_b [kv_lora, n_head * (nope + v)]: head h's rows are W_UK[h]
  // (nope rows) then W_UV[h] (v rows). Materialised once (the largest,
  // DeepSeek-V3's, is 16.7 M floats).
  const TensorPlan& kv_b = t.sources[0];
  const int64_t kv_lora = kv_b.ne[0], nope = t.dim_a, v = t.dim_b;
  std::vector<float> w(size_t(kv_b.rows() * kv_lora));
  PAGODA_RETURN_IF_ERROR(ParallelRows(kv_b.rows(), nth, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) drawn_row(0, r, w.data() + r * kv_lora);
    return Status::Ok();
  }));
  if (t.derive == Derive::kKB) {
    // attn_k_b [nope, kv_lora, n_head]: row (h, c) = column c of W_UK[h].
    return encode_rows([&](int64_t r, float* out) {
      const int64_t h = r / kv_lora, c = r % kv_lora;
      for (int64_t i = 0; i < nope; ++i) out[i] = w[size_t((h * (nope + v) + i) * kv_lora + c)];
    });
  }
  // attn_v_b [kv_lora, v, n_head]: row (h, j) = row j of W_UV[h].
  return encode_rows([&](int64_t r, float* out) {
    const int64_t h = r / v, j = r % v;
    std::copy_n(w.data() + (h * (nope + v) + nope + j) * kv_lora, kv_lora, out);
  });
}

// The bytes of one planned tensor.
Status GenerateTensor(const TensorPlan& t, uint64_t seed, int n_threads, std::vector<uint8_t>& buf) {
  if (!t.values.empty()) {
    const auto* p = reinterpret_cast<const uint8_t*>(t.values.data());
    buf.assign(p, p + t.values.size() * sizeof(float));
    return Status::Ok();
  }
  const int64_t n_rows = t.rows();
  buf.resize(size_t(n_rows * RowBytes(t.type, t.ne[0])));
  const int64_t elements = n_rows * t.ne[0];
  const int nth = int(std::clamp<int64_t>(elements / (1 << 16), 1, n_threads));
  uint8_t* dst = buf.data();
  if (t.derive != Derive::kNone) return FillDerivedRows(t, seed, nth, dst);
  const uint64_t tseed = TensorSeed(seed, t.name);
  const std::vector<float> values = ValueTable(t);
  if (t.type == DType::kF16 || t.type == DType::kBF16) {
    PAGODA_ASSIGN_OR_RETURN(std::vector<uint16_t> enc, Encode<uint16_t>(t.type, values));
    return ParallelRows(n_rows, nth, [&](int64_t r0, int64_t r1) {
      FillEncodedRows(t, enc, tseed, r0, r1, dst);
      return Status::Ok();
    });
  }
  if (t.type == DType::kF32) {
    return ParallelRows(n_rows, nth, [&](int64_t r0, int64_t r1) {
      FillEncodedRows(t, values, tseed, r0, r1, dst);
      return Status::Ok();
    });
  }
  return ParallelRows(n_rows, nth, [&](int64_t r0, int64_t r1) { return FillRows(t, values, tseed, r0, r1, dst); });
}

int ThreadCount(const RandomModelSpec& spec) {
  return spec.n_threads > 0 ? spec.n_threads : int(std::max(1u, std::thread::hardware_concurrency()));
}

// A writer holding the metadata of `spec`, no tensors yet.
Result<GgufWriter> MetadataWriter(const RandomModelSpec& spec) {
  PAGODA_RETURN_IF_ERROR(ValidateRandomModelSpec(spec));
  GgufWriter w;
  random_model::WriteMetadata(spec, w.metadata());
  if (TokenizerVocabSize(spec.tokenizer) < 0) {
    PAGODA_ASSIGN_OR_RETURN(GgufMetadata vocab, spec.arch == "bert" ? MakeSyntheticWordPieceVocab(spec.n_vocab)
                                                                     : MakeSyntheticVocab(spec.n_vocab));
    for (const auto& [key, value] : vocab.entries()) w.metadata().Set(key, value);
  }
  // The caller's tokenizer.* keys; with a synthetic vocabulary only those it
  // does not define (say a chat template).
  for (const auto& [key, value] : spec.tokenizer.entries()) {
    if (key.rfind("tokenizer.", 0) == 0 && !w.metadata().Has(key)) w.metadata().Set(key, value);
  }
  return w;
}

bool IsWeightType(DType t) {
  switch (t) {
    case DType::kF32: case DType::kF16: case DType::kBF16: case DType::kQ4_0: case DType::kQ4_1:
    case DType::kQ5_0: case DType::kQ8_0: case DType::kQ4_K: case DType::kQ5_K: case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

int HeadDim(const RandomModelSpec& s) { return s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head; }

// The encoder's own rules: plain multi-head attention (the file has no
// head_count_kv / key_length), no experts, a classifier head only for bert.
Status ValidateEncoder(const RandomModelSpec& s) {
  if (s.pooling_type < -1 || s.pooling_type > 4) {
    return InvalidArgument("random model: pooling_type " + std::to_string(s.pooling_type) + " is outside [-1, 4]");
  }
  if (s.n_cls_out < 0 || s.n_cls_out > (1 << 16)) return InvalidArgument("random model: n_cls_out must be in [0, 65536]");
  if (s.arch != "bert") {
    if (s.n_cls_out != 0) return InvalidArgument("random model: n_cls_out (a classifier head) is for bert");
    return Status::Ok();
  }
  if (s.n_head_kv != s.n_head || s.head_dim != 0 || s.n_embd % s.n_head != 0) {
    return InvalidArgument("random model: bert needs n_head_kv = n_head, head_dim 0 and n_embd a multiple of n_head");
  }
  if (s.n_expert != 0) return InvalidArgument("random model: bert has no experts");
  if (s.pooling_type == 4 && s.n_cls_out == 0) {
    return InvalidArgument("random model: pooling rank needs a classifier head (n_cls_out > 0)");
  }
  return Status::Ok();
}

Status CheckRowType(const char* what, int64_t ne0, DType t) {
  const DTypeInfo& info = GetDTypeInfo(t);
  if (ne0 % info.block_size != 0) {
    return InvalidArgument(std::string(what) + " " + std::to_string(ne0) + " is not a multiple of " +
                           info.name + "'s block size " + std::to_string(info.block_size));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateRandomModelSpec(const RandomModelSpec& s) {
  static const char* const kArchs[] = {"llama", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "deepseek2", "glm4moe", "bert"};
  if (std::find(std::begin(kArchs), std::end(kArchs), s.arch) == std::end(kArchs)) {
    return InvalidArgument("random model: unsupported architecture '" + s.arch +
                           "' (llama, qwen2, qwen3, qwen2moe, qwen3moe, deepseek2, glm4moe, bert)");
  }
  PAGODA_RETURN_IF_ERROR(ValidateEncoder(s));
  const bool mla = s.arch == "deepseek2";
  auto in_range = [](const char* what, int v, int lo, int hi) -> Status {
    if (v < lo || v > hi) {
      return InvalidArgument(std::string("random model: ") + what + " " + std::to_string(v) +
                             " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return Status::Ok();
  };
  PAGODA_RETURN_IF_ERROR(in_range("n_embd", s.n_embd, 1, kMaxDim));
  PAGODA_RETURN_IF_ERROR(in_range("n_layer", s.n_layer, 1, kMaxLayers));
  PAGODA_RETURN_IF_ERROR(in_range("n_head", s.n_head, 1, s.n_embd));
  // deepseek2's KV heads follow from the MLA layout.
  if (!mla) PAGODA_RETURN_IF_ERROR(in_range("n_head_kv", s.n_head_kv, 1, s.n_head));
  PAGODA_RETURN_IF_ERROR(in_range("head_dim", s.head_dim, 0, 4096));
  PAGODA_RETURN_IF_ERROR(in_range("n_ff", s.n_ff, 1, kMaxDim));
  PAGODA_RETURN_IF_ERROR(in_range("n_ctx", s.n_ctx, 1, 1 << 24));
  if (!mla && s.n_head % s.n_head_kv != 0) {
    return InvalidArgument("random model: n_head " + std::to_string(s.n_head) +
                           " is not a multiple of n_head_kv " + std::to_string(s.n_head_kv));
  }
  if (!mla && s.head_dim == 0 && s.n_embd % s.n_head != 0) {
    return InvalidArgument("random model: n_embd is not a multiple of n_head; set head_dim");
  }
  const int hd = mla ? s.qk_rope_dim : HeadDim(s);
  if (!mla && hd % 2 != 0) return InvalidArgument("random model: head_dim " + std::to_string(hd) + " is odd");
  if (!s.rope_freq_factors.empty() && s.rope_freq_factors.size() != size_t(hd / 2)) {
    return InvalidArgument("random model: rope_freq_factors has " +
                           std::to_string(s.rope_freq_factors.size()) + " entries, need head_dim/2 = " +
                           std::to_string(hd / 2));
  }
  for (float f : s.rope_freq_factors) {
    if (!(f > 0.0f) || !std::isfinite(f)) return InvalidArgument("random model: rope_freq_factors must be > 0");
  }
  if (!(s.rope_base > 1.0f) || !std::isfinite(s.rope_base)) {
    return InvalidArgument("random model: rope_base must be > 1");
  }
  if (!(s.rms_eps > 0.0f && s.rms_eps < 1.0f)) return InvalidArgument("random model: rms_eps must be in (0, 1)");

  PAGODA_RETURN_IF_ERROR(random_model::ValidateMoeMla(s));
  const DType out_type = s.output_type.value_or(s.weight_type);
  for (DType t : {s.weight_type, out_type, s.expert_type.value_or(s.weight_type)}) {
    if (!IsWeightType(t)) {
      return InvalidArgument(std::string("random model: ") + DTypeName(t) + " is not a weight type");
    }
  }
  PAGODA_RETURN_IF_ERROR(CheckRowType("n_embd", s.n_embd, s.weight_type).WithContext("random model"));
  // The other MLA / expert rows fall back to a type that fits (RowType).
  if (!mla) {
    PAGODA_RETURN_IF_ERROR(CheckRowType("n_head * head_dim", int64_t(s.n_head) * hd, s.weight_type)
                               .WithContext("random model"));
  }
  if (!random_model::HasExperts(s) || s.n_layer_dense_lead > 0) {
    PAGODA_RETURN_IF_ERROR(CheckRowType("n_ff", s.n_ff, s.weight_type).WithContext("random model"));
  }
  if (!s.tied_output) {
    PAGODA_RETURN_IF_ERROR(CheckRowType("n_embd", s.n_embd, out_type).WithContext("random model output"));
  }

  const int64_t tok_n = TokenizerVocabSize(s.tokenizer);
  if (s.tokenizer.Has("tokenizer.ggml.tokens") && tok_n < 0) {
    return InvalidArgument("random model: tokenizer.ggml.tokens is not an array");
  }
  if (tok_n >= 0) {
    if (s.n_vocab != 0 && s.n_vocab != tok_n) {
      return InvalidArgument("random model: n_vocab " + std::to_string(s.n_vocab) +
                             " differs from the tokenizer's " + std::to_string(tok_n) + " tokens");
    }
    PAGODA_RETURN_IF_ERROR(in_range("tokenizer vocabulary size", int(tok_n), 1, kMaxVocab));
  } else if (s.n_vocab < kSyntheticVocabMinSize || s.n_vocab > kSyntheticVocabMaxSize) {
    return InvalidArgument("random model: without tokenizer metadata n_vocab must be in [" +
                           std::to_string(kSyntheticVocabMinSize) + ", " +
                           std::to_string(kSyntheticVocabMaxSize) + "] for the synthetic vocabulary, got " +
                           std::to_string(s.n_vocab));
  }
  return Status::Ok();
}

Result<GgufWriter> BuildRandomModel(const RandomModelSpec& spec) {
  PAGODA_ASSIGN_OR_RETURN(GgufWriter w, MetadataWriter(spec));
  const int n_threads = ThreadCount(spec);
  std::vector<uint8_t> buf;
  for (const TensorPlan& t : random_model::PlanTensors(spec)) {
    PAGODA_RETURN_IF_ERROR(GenerateTensor(t, spec.seed, n_threads, buf));
    PAGODA_RETURN_IF_ERROR(
        w.AddTensor(t.name, t.type, t.ne, std::move(buf)).WithContext("random model tensor '" + t.name + "'"));
  }
  return w;
}

Status WriteRandomModel(const RandomModelSpec& spec, const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(GgufWriter w, MetadataWriter(spec));
  const std::vector<TensorPlan> plan = random_model::PlanTensors(spec);
  for (const TensorPlan& t : plan) {
    PAGODA_RETURN_IF_ERROR(w.DeclareTensor(t.name, t.type, t.ne).WithContext("random model tensor '" + t.name + "'"));
  }
  const int n_threads = ThreadCount(spec);
  return w.WriteStreaming(path, [&](size_t i, std::vector<uint8_t>& bytes) {
    return GenerateTensor(plan[i], spec.seed, n_threads, bytes).WithContext("random model tensor '" + plan[i].name + "'");
  });
}

}  // namespace pagoda
