#include "model/random_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string_view>
#include <thread>

#include "kernels/cpu/quantize.h"
#include "kernels/cpu/quantize_weights.h"
#include "model/synthetic_vocab.h"

namespace pagoda {
namespace {

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

struct TensorPlan {
  std::string name;
  DType type;
  std::vector<int64_t> ne;  // ggml order
  float mean = 0.0f;
  float sigma = 0.0f;
  std::vector<float> values;  // fixed F32 contents instead of random ones
};

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

Status AddRandomTensor(GgufWriter& w, const TensorPlan& t, uint64_t seed, int n_threads,
                       std::vector<uint8_t>& buf) {
  if (!t.values.empty()) {
    return w.AddTensor(t.name, DType::kF32, t.ne, t.values.data(), t.values.size() * sizeof(float));
  }
  int64_t n_rows = 1;
  for (size_t i = 1; i < t.ne.size(); ++i) n_rows *= t.ne[i];
  buf.resize(size_t(n_rows * RowBytes(t.type, t.ne[0])));
  const uint64_t tseed = TensorSeed(seed, t.name);
  const int64_t elements = n_rows * t.ne[0];
  const int nth = int(std::clamp<int64_t>(elements / (1 << 16), 1, n_threads));
  const std::vector<float> values = ValueTable(t);
  uint8_t* dst = buf.data();
  if (t.type == DType::kF16 || t.type == DType::kBF16) {
    PAGODA_ASSIGN_OR_RETURN(std::vector<uint16_t> enc, Encode<uint16_t>(t.type, values));
    PAGODA_RETURN_IF_ERROR(ParallelRows(n_rows, nth, [&](int64_t r0, int64_t r1) {
      FillEncodedRows(t, enc, tseed, r0, r1, dst);
      return Status::Ok();
    }));
  } else if (t.type == DType::kF32) {
    PAGODA_RETURN_IF_ERROR(ParallelRows(n_rows, nth, [&](int64_t r0, int64_t r1) {
      FillEncodedRows(t, values, tseed, r0, r1, dst);
      return Status::Ok();
    }));
  } else {
    PAGODA_RETURN_IF_ERROR(ParallelRows(n_rows, nth, [&](int64_t r0, int64_t r1) {
      return FillRows(t, values, tseed, r0, r1, dst);
    }));
  }
  return w.AddTensor(t.name, t.type, t.ne, std::move(buf))
      .WithContext("random model tensor '" + t.name + "'");
}

// llama.cpp's LLAMA_FTYPE for a model whose matrices are all `t`.
uint32_t FileType(DType t) {
  switch (t) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ4_1: return 3;
    case DType::kQ8_0: return 7;
    case DType::kQ5_0: return 8;
    case DType::kQ5_1: return 9;
    case DType::kQ2_K: return 10;
    case DType::kQ3_K: return 11;  // Q3_K_S
    case DType::kQ4_K: return 14;  // Q4_K_S
    case DType::kQ5_K: return 16;  // Q5_K_S
    case DType::kQ6_K: return 18;
    case DType::kBF16: return 32;
    default: return 0;
  }
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

bool IsQuantized(DType t) { return t != DType::kF32 && t != DType::kF16 && t != DType::kBF16; }

int HeadDim(const RandomModelSpec& s) { return s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head; }

int64_t TokenizerVocabSize(const GgufMetadata& md) {
  const GgufValue* v = md.Find("tokenizer.ggml.tokens");
  const GgufArray* a = v ? v->AsArray() : nullptr;
  return a ? int64_t(a->items.size()) : -1;
}

int VocabSize(const RandomModelSpec& s) {
  const int64_t n = TokenizerVocabSize(s.tokenizer);
  return n >= 0 ? int(n) : s.n_vocab;
}

// sigma for a matrix with `fan_in` inputs, scaled from its value at `ref`.
float Sigma(float base, int64_t fan_in, double ref = 128.0) {
  return float(base * std::sqrt(ref / double(fan_in)));
}

std::vector<TensorPlan> PlanTensors(const RandomModelSpec& s) {
  const int64_t hd = HeadDim(s), n_embd = s.n_embd, n_ff = s.n_ff, n_vocab = VocabSize(s);
  const int64_t q_dim = s.n_head * hd, kv_dim = s.n_head_kv * hd;
  const DType wt = s.weight_type;
  const bool qwen2 = s.arch == "qwen2", qwen3 = s.arch == "qwen3";
  std::vector<TensorPlan> p;
  auto norm = [&](std::string name, int64_t n) { p.push_back({std::move(name), DType::kF32, {n}, 1.0f, 0.1f, {}}); };
  auto bias = [&](std::string name, int64_t n) { p.push_back({std::move(name), DType::kF32, {n}, 0.0f, 0.1f, {}}); };
  auto mat = [&](std::string name, DType t, int64_t ne0, int64_t ne1, float sigma) {
    p.push_back({std::move(name), t, {ne0, ne1}, 0.0f, sigma, {}});
  };
  // Tied: the embedding is also the LM head, so it is scaled like one.
  mat("token_embd.weight", wt, n_embd, n_vocab, s.tied_output ? Sigma(0.6f, n_embd) : 1.0f);
  if (!s.rope_freq_factors.empty()) {
    const int64_t n = int64_t(s.rope_freq_factors.size());
    p.push_back({"rope_freqs.weight", DType::kF32, {n}, 0.0f, 0.0f, s.rope_freq_factors});
  }
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    norm(b + "attn_norm.weight", n_embd);
    mat(b + "attn_q.weight", wt, n_embd, q_dim, Sigma(0.25f, n_embd));
    if (qwen2) bias(b + "attn_q.bias", q_dim);
    mat(b + "attn_k.weight", wt, n_embd, kv_dim, Sigma(0.25f, n_embd));
    if (qwen2) bias(b + "attn_k.bias", kv_dim);
    mat(b + "attn_v.weight", wt, n_embd, kv_dim, Sigma(0.2f, n_embd));
    if (qwen2) bias(b + "attn_v.bias", kv_dim);
    if (qwen3) {
      norm(b + "attn_q_norm.weight", hd);
      norm(b + "attn_k_norm.weight", hd);
    }
    mat(b + "attn_output.weight", wt, q_dim, n_embd, Sigma(0.15f, q_dim));
    norm(b + "ffn_norm.weight", n_embd);
    mat(b + "ffn_gate.weight", wt, n_embd, n_ff, Sigma(0.15f, n_embd));
    mat(b + "ffn_up.weight", wt, n_embd, n_ff, Sigma(0.15f, n_embd));
    mat(b + "ffn_down.weight", wt, n_ff, n_embd, Sigma(0.1f, n_ff, 256.0));
  }
  norm("output_norm.weight", n_embd);
  if (!s.tied_output) mat("output.weight", s.output_type.value_or(wt), n_embd, n_vocab, Sigma(0.7f, n_embd));
  return p;
}

Status CheckRowType(const char* what, int64_t ne0, DType t) {
  const DTypeInfo& info = GetDTypeInfo(t);
  if (ne0 % info.block_size != 0) {
    return InvalidArgument(std::string(what) + " " + std::to_string(ne0) + " is not a multiple of " +
                           info.name + "'s block size " + std::to_string(info.block_size));
  }
  return Status::Ok();
}

void WriteMetadata(const RandomModelSpec& s, GgufMetadata& md) {
  const std::string& a = s.arch;
  const int hd = HeadDim(s);
  md.Set("general.architecture", a);
  md.Set("general.name", s.name);
  md.Set("general.file_type", FileType(s.weight_type));
  if (IsQuantized(s.weight_type)) md.Set("general.quantization_version", uint32_t{2});
  md.Set(a + ".context_length", uint32_t(s.n_ctx));
  md.Set(a + ".embedding_length", uint32_t(s.n_embd));
  md.Set(a + ".block_count", uint32_t(s.n_layer));
  md.Set(a + ".feed_forward_length", uint32_t(s.n_ff));
  md.Set(a + ".attention.head_count", uint32_t(s.n_head));
  md.Set(a + ".attention.head_count_kv", uint32_t(s.n_head_kv));
  if (s.n_embd % s.n_head != 0 || hd != s.n_embd / s.n_head) {
    md.Set(a + ".attention.key_length", uint32_t(hd));
    md.Set(a + ".attention.value_length", uint32_t(hd));
  }
  md.Set(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  md.Set(a + ".rope.freq_base", s.rope_base);
  md.Set(a + ".rope.dimension_count", uint32_t(hd));
  md.Set(a + ".vocab_size", uint32_t(VocabSize(s)));
}

}  // namespace

Status ValidateRandomModelSpec(const RandomModelSpec& s) {
  if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3") {
    return InvalidArgument("random model: unsupported architecture '" + s.arch +
                           "' (llama, qwen2, qwen3)");
  }
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
  PAGODA_RETURN_IF_ERROR(in_range("n_head_kv", s.n_head_kv, 1, s.n_head));
  PAGODA_RETURN_IF_ERROR(in_range("head_dim", s.head_dim, 0, 4096));
  PAGODA_RETURN_IF_ERROR(in_range("n_ff", s.n_ff, 1, kMaxDim));
  PAGODA_RETURN_IF_ERROR(in_range("n_ctx", s.n_ctx, 1, 1 << 24));
  if (s.n_head % s.n_head_kv != 0) {
    return InvalidArgument("random model: n_head " + std::to_string(s.n_head) +
                           " is not a multiple of n_head_kv " + std::to_string(s.n_head_kv));
  }
  if (s.head_dim == 0 && s.n_embd % s.n_head != 0) {
    return InvalidArgument("random model: n_embd is not a multiple of n_head; set head_dim");
  }
  const int hd = HeadDim(s);
  if (hd % 2 != 0) return InvalidArgument("random model: head_dim " + std::to_string(hd) + " is odd");
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

  const DType out_type = s.output_type.value_or(s.weight_type);
  for (DType t : {s.weight_type, out_type}) {
    if (!IsWeightType(t)) {
      return InvalidArgument(std::string("random model: ") + DTypeName(t) + " is not a weight type");
    }
  }
  PAGODA_RETURN_IF_ERROR(CheckRowType("n_embd", s.n_embd, s.weight_type).WithContext("random model"));
  PAGODA_RETURN_IF_ERROR(CheckRowType("n_head * head_dim", int64_t(s.n_head) * hd, s.weight_type)
                             .WithContext("random model"));
  PAGODA_RETURN_IF_ERROR(CheckRowType("n_ff", s.n_ff, s.weight_type).WithContext("random model"));
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
  PAGODA_RETURN_IF_ERROR(ValidateRandomModelSpec(spec));
  GgufWriter w;
  WriteMetadata(spec, w.metadata());
  if (TokenizerVocabSize(spec.tokenizer) < 0) {
    PAGODA_ASSIGN_OR_RETURN(GgufMetadata vocab, MakeSyntheticVocab(spec.n_vocab));
    for (const auto& [key, value] : vocab.entries()) w.metadata().Set(key, value);
  }
  // The caller's tokenizer.* keys; with a synthetic vocabulary only those it
  // does not define (say a chat template).
  for (const auto& [key, value] : spec.tokenizer.entries()) {
    if (key.rfind("tokenizer.", 0) == 0 && !w.metadata().Has(key)) w.metadata().Set(key, value);
  }

  const int n_threads = spec.n_threads > 0 ? spec.n_threads
                                           : int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<uint8_t> buf;
  for (const TensorPlan& t : PlanTensors(spec)) {
    PAGODA_RETURN_IF_ERROR(AddRandomTensor(w, t, spec.seed, n_threads, buf));
  }
  return w;
}

Status WriteRandomModel(const RandomModelSpec& spec, const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(GgufWriter w, BuildRandomModel(spec));
  return w.Write(path);
}

}  // namespace pagoda
