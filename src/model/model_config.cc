#include "model/model_config.h"

#include <cmath>

#include "gguf/gguf_file.h"

namespace pagoda {
namespace {

// Upper bounds that keep every buffer size computed from them far inside
// int64 (and real models far inside them).
constexpr int64_t kMaxEmbd = 1 << 17;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxHeadDim = 4096;
constexpr int64_t kMaxFf = 1 << 20;
constexpr int64_t kMaxCtx = int64_t{1} << 24;
constexpr int64_t kMaxVocab = int64_t{1} << 24;

class ConfigReader {
 public:
  ConfigReader(const GgufFile& file, const std::string& arch) : file_(file), arch_(arch) {}

  std::string Key(const char* suffix) const { return arch_ + "." + suffix; }

  Status Error(const std::string& what) const {
    return InvalidArgument(file_.path() + ": " + what);
  }

  // Required integer key in [lo, hi].
  Result<int64_t> Int(const char* suffix, int64_t lo, int64_t hi) const {
    auto v = file_.metadata().GetInt(Key(suffix));
    if (!v.ok()) return v.status().WithContext(file_.path());
    return InRange(suffix, *v, lo, hi);
  }
  Result<int64_t> IntOr(const char* suffix, int64_t dflt, int64_t lo, int64_t hi) const {
    auto v = file_.metadata().GetIntOr(Key(suffix), dflt);
    if (!v.ok()) return v.status().WithContext(file_.path());
    return InRange(suffix, *v, lo, hi);
  }
  Result<double> FloatOr(const char* suffix, double dflt) const {
    auto v = file_.metadata().GetFloatOr(Key(suffix), dflt);
    if (!v.ok()) return v.status().WithContext(file_.path());
    return *v;
  }
  Result<int64_t> InRange(const char* suffix, int64_t v, int64_t lo, int64_t hi) const {
    if (v < lo || v > hi) {
      return Error("metadata key '" + Key(suffix) + "' = " + std::to_string(v) +
                   " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v;
  }

 private:
  const GgufFile& file_;
  const std::string& arch_;
};

Status ReadRope(const GgufFile& file, const ConfigReader& r, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.n_rot, r.IntOr("rope.dimension_count", c.head_dim_k, 2, c.head_dim_k));
  if (c.n_rot % 2 != 0) return r.Error("rope.dimension_count " + std::to_string(c.n_rot) + " is odd");
  PAGODA_ASSIGN_OR_RETURN(c.rope_base, r.FloatOr("rope.freq_base", 10000.0));
  if (!(c.rope_base > 1.0)) return r.Error("'" + r.Key("rope.freq_base") + "' must be > 1");

  auto type = file.metadata().GetStringOr(r.Key("rope.scaling.type"), "none");
  if (!type.ok()) return type.status().WithContext(file.path());
  double factor = 1.0;
  if (*type == "linear") {
    PAGODA_ASSIGN_OR_RETURN(factor, r.FloatOr("rope.scaling.factor", 1.0));
  } else if (*type == "none") {
    // Older converters wrote the linear factor under rope.scale_linear.
    PAGODA_ASSIGN_OR_RETURN(factor, r.FloatOr("rope.scale_linear", 1.0));
  } else {
    return Unimplemented(file.path() + ": rope scaling type '" + *type + "' is not supported");
  }
  if (!(factor > 0.0 && factor < 1e6)) return r.Error("rope scaling factor must be in (0, 1e6)");
  c.rope_freq_scale = 1.0 / factor;

  if (const GgufTensorInfo* info = file.FindTensor("rope_freqs.weight")) {
    const TensorView t = file.View(*info);
    if (t.type != DType::kF32 || t.elements() != c.n_rot / 2 || t.ne[0] != c.n_rot / 2) {
      return r.Error("tensor 'rope_freqs.weight' must be F32 with " + std::to_string(c.n_rot / 2) +
                     " elements (n_rot/2)");
    }
    const float* f = static_cast<const float*>(t.data);
    c.rope_freq_factors.assign(f, f + c.n_rot / 2);
    for (float v : c.rope_freq_factors) {
      if (!(v > 0.0f) || !std::isfinite(v)) return r.Error("tensor 'rope_freqs.weight' has a non-positive factor");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ReadModelConfig(const GgufFile& file, const std::string& arch,
                                    const ArchTraits& traits) {
  ConfigReader r(file, arch);
  ModelConfig c;
  c.arch = arch;
  c.rope_neox = traits.rope_neox;
  PAGODA_ASSIGN_OR_RETURN(c.n_ctx_train, r.Int("context_length", 1, kMaxCtx));
  PAGODA_ASSIGN_OR_RETURN(c.n_embd, r.Int("embedding_length", 1, kMaxEmbd));
  PAGODA_ASSIGN_OR_RETURN(c.n_layer, r.Int("block_count", 1, kMaxLayers));
  PAGODA_ASSIGN_OR_RETURN(c.n_ff, r.Int("feed_forward_length", 1, kMaxFf));
  PAGODA_ASSIGN_OR_RETURN(c.n_head, r.Int("attention.head_count", 1, kMaxHeads));
  PAGODA_ASSIGN_OR_RETURN(c.n_head_kv, r.IntOr("attention.head_count_kv", c.n_head, 1, c.n_head));
  if (c.n_head % c.n_head_kv != 0) {
    return r.Error("attention.head_count " + std::to_string(c.n_head) +
                   " is not a multiple of attention.head_count_kv " + std::to_string(c.n_head_kv));
  }
  const bool has_key_length = file.metadata().Has(r.Key("attention.key_length"));
  if (!has_key_length && c.n_embd % c.n_head != 0) {
    return r.Error("embedding_length " + std::to_string(c.n_embd) +
                   " is not a multiple of attention.head_count " + std::to_string(c.n_head) +
                   " and attention.key_length is absent");
  }
  PAGODA_ASSIGN_OR_RETURN(c.head_dim_k, r.IntOr("attention.key_length", c.n_embd / c.n_head, 1, kMaxHeadDim));
  PAGODA_ASSIGN_OR_RETURN(c.head_dim_v, r.IntOr("attention.value_length", c.head_dim_k, 1, kMaxHeadDim));
  double eps;
  PAGODA_ASSIGN_OR_RETURN(eps, r.FloatOr("attention.layer_norm_rms_epsilon", 1e-5));
  if (!(eps > 0.0 && eps < 1.0)) return r.Error("'" + r.Key("attention.layer_norm_rms_epsilon") + "' must be in (0, 1)");
  c.rms_eps = static_cast<float>(eps);
  PAGODA_RETURN_IF_ERROR(ReadRope(file, r, c));

  const GgufTensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound(file.path() + ": missing tensor 'token_embd.weight'");
  c.n_vocab = embd->ne[1];
  if (c.n_vocab < 1 || c.n_vocab > kMaxVocab) {
    return r.Error("tensor 'token_embd.weight' has " + std::to_string(c.n_vocab) + " rows (vocab)");
  }
  c.tied_output = file.FindTensor("output.weight") == nullptr;
  return c;
}

}  // namespace pagoda
