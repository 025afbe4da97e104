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
constexpr int64_t kMaxExperts = 512;  // LLAMA_MAX_EXPERTS

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

Status ReadYarn(const GgufFile& file, const ConfigReader& r, double factor, ModelConfig& c) {
  YarnConfig& y = c.yarn;
  y.enabled = true;
  PAGODA_ASSIGN_OR_RETURN(y.n_ctx_orig, r.IntOr("rope.scaling.original_context_length", c.n_ctx_train, 1, kMaxCtx));
  PAGODA_ASSIGN_OR_RETURN(y.beta_fast, r.FloatOr("rope.scaling.yarn_beta_fast", 32.0));
  PAGODA_ASSIGN_OR_RETURN(y.beta_slow, r.FloatOr("rope.scaling.yarn_beta_slow", 1.0));
  if (!(y.beta_fast > 0.0 && y.beta_slow > 0.0)) return r.Error("YaRN beta_fast / beta_slow must be > 0");
  // deepseek2 files carry 0.1 * mscale_all_dim as yarn_log_multiplier (absent:
  // 0, as llama.cpp); elsewhere ggml's YaRN scales by 1 + 0.1 ln(factor).
  double log_mul = 0.1;
  if (c.mla.kv_lora_rank > 0) {
    PAGODA_ASSIGN_OR_RETURN(log_mul, r.FloatOr("rope.scaling.yarn_log_multiplier", 0.0));
  }
  if (!(log_mul >= 0.0 && log_mul < 100.0)) return r.Error("rope.scaling.yarn_log_multiplier must be in [0, 100)");
  y.attn_mscale = factor > 1.0 ? 1.0 + log_mul * std::log(factor) : 1.0;
  if (c.mla.kv_lora_rank == 0 && c.n_rot != c.head_dim_k) {
    // ggml scales only the rotated dims by mscale; as a score scale that is
    // exact only when every dim rotates.
    return Unimplemented(file.path() + ": YaRN with partial rotary dims is not supported");
  }
  return Status::Ok();
}

Status ReadMoe(const GgufFile& file, const ConfigReader& r, const ArchTraits& traits, ModelConfig& c) {
  MoeConfig& m = c.moe;
  PAGODA_ASSIGN_OR_RETURN(m.n_expert, r.IntOr("expert_count", 0, 0, kMaxExperts));
  if (m.n_expert == 0) return Status::Ok();
  PAGODA_ASSIGN_OR_RETURN(m.n_expert_used, r.Int("expert_used_count", 1, m.n_expert));
  PAGODA_ASSIGN_OR_RETURN(m.n_ff_exp, r.IntOr("expert_feed_forward_length", c.n_ff, 1, kMaxFf));
  PAGODA_ASSIGN_OR_RETURN(m.n_expert_shared, r.IntOr("expert_shared_count", 0, 0, kMaxExperts));
  PAGODA_ASSIGN_OR_RETURN(m.n_ff_shexp, r.IntOr("expert_shared_feed_forward_length",
                                                m.n_ff_exp * m.n_expert_shared, 0, kMaxFf));
  PAGODA_ASSIGN_OR_RETURN(m.n_leading_dense, r.IntOr("leading_dense_block_count", 0, 0, c.n_layer));
  const int64_t default_gating = traits.default_gating == MoeConfig::Gating::kSigmoid ? 2 : 1;
  PAGODA_ASSIGN_OR_RETURN(const int64_t gating, r.IntOr("expert_gating_func", default_gating, 0, 16));
  if (gating == 1) {
    m.gating = MoeConfig::Gating::kSoftmax;
  } else if (gating == 2) {
    m.gating = MoeConfig::Gating::kSigmoid;
  } else {
    return Unimplemented(file.path() + ": '" + r.Key("expert_gating_func") + "' = " + std::to_string(gating) +
                         " is not supported (1 softmax, 2 sigmoid)");
  }
  switch (traits.moe_norm) {
    case ArchTraits::MoeNorm::kAlways: m.norm_w = true; break;
    case ArchTraits::MoeNorm::kNever: m.norm_w = false; break;
    case ArchTraits::MoeNorm::kFromFile: {
      auto v = file.metadata().GetBoolOr(r.Key("expert_weights_norm"), false);
      if (!v.ok()) return v.status().WithContext(file.path());
      m.norm_w = *v;
    }
  }
  PAGODA_ASSIGN_OR_RETURN(const double scale, r.FloatOr("expert_weights_scale", 1.0));
  if (!(scale >= 0.0 && scale < 1e4)) return r.Error("'" + r.Key("expert_weights_scale") + "' must be in [0, 1e4)");
  m.w_scale = scale == 0.0 ? 1.0f : static_cast<float>(scale);
  PAGODA_ASSIGN_OR_RETURN(m.n_group, r.IntOr("expert_group_count", 1, 1, m.n_expert));
  PAGODA_ASSIGN_OR_RETURN(m.n_group_used, r.IntOr("expert_group_used_count", m.n_group, 1, m.n_group));
  if (m.n_expert % m.n_group != 0) {
    return r.Error("expert_count " + std::to_string(m.n_expert) + " is not a multiple of expert_group_count " +
                   std::to_string(m.n_group));
  }
  if (m.n_expert_used > m.n_group_used * (m.n_expert / m.n_group)) {
    return r.Error("expert_used_count " + std::to_string(m.n_expert_used) +
                   " exceeds the experts of the expert_group_used_count groups");
  }
  return Status::Ok();
}

// Reads the MLA ranks; head_dim_k / head_dim_v / n_head_kv keep the file's
// values (they describe the cache rows in the split layout).
Status ReadMla(const GgufFile& file, const ConfigReader& r, ModelConfig& c) {
  MlaConfig& m = c.mla;
  PAGODA_ASSIGN_OR_RETURN(m.kv_lora_rank, r.Int("attention.kv_lora_rank", 1, kMaxHeadDim));
  PAGODA_ASSIGN_OR_RETURN(m.q_lora_rank, r.IntOr("attention.q_lora_rank", 0, 0, kMaxEmbd));
  m.head_dim_rope = c.n_rot;
  m.split_kv_b = file.metadata().Has(r.Key("attention.key_length_mla"));
  int64_t qk = c.head_dim_k, v = c.head_dim_v;
  if (m.split_kv_b) {
    PAGODA_ASSIGN_OR_RETURN(qk, r.Int("attention.key_length_mla", 2, kMaxHeadDim));
    PAGODA_ASSIGN_OR_RETURN(v, r.Int("attention.value_length_mla", 1, kMaxHeadDim));
    if (c.n_head_kv != 1 || c.head_dim_k != m.kv_lora_rank + m.head_dim_rope || c.head_dim_v != m.kv_lora_rank) {
      return r.Error("MLA (attn_k_b / attn_v_b layout) needs head_count_kv 1, key_length kv_lora_rank + rope (" +
                     std::to_string(m.kv_lora_rank + m.head_dim_rope) + ") and value_length kv_lora_rank (" +
                     std::to_string(m.kv_lora_rank) + "); got " + std::to_string(c.n_head_kv) + ", " +
                     std::to_string(c.head_dim_k) + ", " + std::to_string(c.head_dim_v));
    }
  } else if (c.n_head_kv != c.n_head) {
    return r.Error("MLA (attn_kv_b layout) needs head_count_kv = head_count");
  }
  if (qk <= m.head_dim_rope) {
    return r.Error("MLA key length " + std::to_string(qk) + " must exceed rope.dimension_count " +
                   std::to_string(m.head_dim_rope));
  }
  m.head_dim_nope = qk - m.head_dim_rope;
  m.head_dim_v = v;
  return Status::Ok();
}

Status ReadRope(const GgufFile& file, const ConfigReader& r, ModelConfig& c) {
  if (c.n_rot % 2 != 0) return r.Error("rope.dimension_count " + std::to_string(c.n_rot) + " is odd");
  PAGODA_ASSIGN_OR_RETURN(c.rope_base, r.FloatOr("rope.freq_base", 10000.0));
  if (!(c.rope_base > 1.0)) return r.Error("'" + r.Key("rope.freq_base") + "' must be > 1");

  auto type = file.metadata().GetStringOr(r.Key("rope.scaling.type"), "none");
  if (!type.ok()) return type.status().WithContext(file.path());
  double factor = 1.0;
  if (*type == "linear" || *type == "yarn") {
    PAGODA_ASSIGN_OR_RETURN(factor, r.FloatOr("rope.scaling.factor", 1.0));
  } else if (*type == "none") {
    // Older converters wrote the linear factor under rope.scale_linear.
    PAGODA_ASSIGN_OR_RETURN(factor, r.FloatOr("rope.scale_linear", 1.0));
  } else {
    return Unimplemented(file.path() + ": rope scaling type '" + *type + "' is not supported");
  }
  if (!(factor > 0.0 && factor < 1e6)) return r.Error("rope scaling factor must be in (0, 1e6)");
  c.rope_freq_scale = 1.0 / factor;
  if (*type == "yarn") PAGODA_RETURN_IF_ERROR(ReadYarn(file, r, factor, c));

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
  // Not below 1e-30: a smaller value underflows to 0 as a float (found by the fuzzer).
  if (!(eps >= 1e-30 && eps < 1.0)) {
    return r.Error("'" + r.Key("attention.layer_norm_rms_epsilon") + "' must be in [1e-30, 1)");
  }
  c.rms_eps = static_cast<float>(eps);
  PAGODA_ASSIGN_OR_RETURN(c.n_rot, r.IntOr("rope.dimension_count", c.head_dim_k, 2, c.head_dim_k));
  if (traits.mla) PAGODA_RETURN_IF_ERROR(ReadMla(file, r, c));
  PAGODA_RETURN_IF_ERROR(ReadRope(file, r, c));
  PAGODA_RETURN_IF_ERROR(ReadMoe(file, r, traits, c));
  if (traits.skip_nextn_layers) {
    PAGODA_ASSIGN_OR_RETURN(c.n_layer_skipped, r.IntOr("nextn_predict_layers", 0, 0, c.n_layer - 1));
    c.n_layer -= c.n_layer_skipped;
  }

  const GgufTensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFound(file.path() + ": missing tensor 'token_embd.weight'");
  c.n_vocab = embd->ne[1];
  if (c.n_vocab < 1 || c.n_vocab > kMaxVocab) {
    return r.Error("tensor 'token_embd.weight' has " + std::to_string(c.n_vocab) + " rows (vocab)");
  }
  c.tied_output = file.FindTensor("output.weight") == nullptr;
  int64_t pooling;
  PAGODA_ASSIGN_OR_RETURN(pooling, r.IntOr("pooling_type", -1, -1, 4));
  c.pooling = static_cast<PoolingType>(pooling);
  return c;
}

const char* PoolingTypeName(PoolingType p) {
  switch (p) {
    case PoolingType::kUnspecified: return "unspecified";
    case PoolingType::kNone: return "none";
    case PoolingType::kMean: return "mean";
    case PoolingType::kCls: return "cls";
    case PoolingType::kLast: return "last";
    case PoolingType::kRank: return "rank";
  }
  return "unknown";
}

}  // namespace pagoda
