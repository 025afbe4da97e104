#include "model/random_model_plan.h"

#include <cmath>

namespace pagoda::random_model {
namespace {

bool IsMla(const RandomModelSpec& s) { return s.arch == "deepseek2"; }
bool HasSharedCount(const RandomModelSpec& s) { return s.arch == "deepseek2" || s.arch == "glm4moe"; }

int HeadDim(const RandomModelSpec& s) { return s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head; }

// rope.dimension_count of the GQA architectures.
int RopeDims(const RandomModelSpec& s) {
  if (s.n_rot > 0) return s.n_rot;
  return s.arch == "glm4moe" ? HeadDim(s) / 2 : HeadDim(s);
}

int GatingFunc(const RandomModelSpec& s) {
  if (s.expert_gating_func != 0) return s.expert_gating_func;
  return s.arch == "glm4moe" ? 2 : 1;
}

// llama-quantize's fallback for rows a type's block does not divide.
DType RowType(DType t, int64_t ne0) {
  while (ne0 % GetDTypeInfo(t).block_size != 0) {
    switch (t) {
      case DType::kQ4_K: case DType::kQ5_K: t = DType::kQ5_0; break;
      case DType::kQ6_K: t = DType::kQ8_0; break;
      default: return DType::kF16;
    }
  }
  return t;
}

// sigma for a matrix with `fan_in` inputs, scaled from its value at `ref`.
float Sigma(float base, int64_t fan_in, double ref = 128.0) {
  return float(base * std::sqrt(ref / double(fan_in)));
}

// llama.cpp's LLAMA_FTYPE for a model whose matrices are all `t`.
uint32_t FileType(DType t, bool more_bits) {
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
    case DType::kQ4_K: return more_bits ? 15 : 14;  // Q4_K_M : Q4_K_S
    case DType::kQ5_K: return more_bits ? 17 : 16;  // Q5_K_M : Q5_K_S
    case DType::kQ6_K: return 18;
    case DType::kBF16: return 32;
    default: return 0;
  }
}

// llama-quantize's use_more_bits(i_layer, n_layers).
bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool IsQuantized(DType t) { return t != DType::kF32 && t != DType::kF16 && t != DType::kBF16; }

// Builds the plan; the sigmas follow testdata/synthetic/README.md, scaled by
// fan-in from the dimensions of those files.
class Planner {
 public:
  explicit Planner(const RandomModelSpec& s) : s_(s), wt_(s.weight_type) {}

  std::vector<TensorPlan> Plan() {
    if (s_.arch == "bert") return Bert();
    const int64_t n_embd = s_.n_embd, n_vocab = VocabSize(s_);
    // Tied: the embedding is also the LM head, so it is scaled like one.
    Mat("token_embd.weight", wt_, n_embd, n_vocab, s_.tied_output ? Sigma(0.6f, n_embd) : 1.0f);
    if (!s_.rope_freq_factors.empty()) {
      const int64_t n = int64_t(s_.rope_freq_factors.size());
      TensorPlan t = Drawn("rope_freqs.weight", DType::kF32, {n}, 0.0f, 0.0f);
      t.values = s_.rope_freq_factors;
      p_.push_back(std::move(t));
    }
    for (int l = 0; l < s_.n_layer; ++l) Layer(l);
    Norm("output_norm.weight", n_embd);
    if (!s_.tied_output) Mat("output.weight", s_.output_type.value_or(wt_), n_embd, n_vocab, Sigma(0.7f, n_embd));
    return std::move(p_);
  }

 private:
  static TensorPlan Drawn(std::string name, DType t, std::vector<int64_t> ne, float mean, float sigma) {
    TensorPlan p;
    p.name = std::move(name);
    p.type = t;
    p.ne = std::move(ne);
    p.mean = mean;
    p.sigma = sigma;
    return p;
  }
  void Norm(std::string name, int64_t n) { p_.push_back(Drawn(std::move(name), DType::kF32, {n}, 1.0f, 0.1f)); }
  void Bias(std::string name, int64_t n) { p_.push_back(Drawn(std::move(name), DType::kF32, {n}, 0.0f, 0.1f)); }
  void Mat(std::string name, DType t, int64_t ne0, int64_t ne1, float sigma) {
    p_.push_back(Drawn(std::move(name), RowType(t, ne0), {ne0, ne1}, 0.0f, sigma));
  }

  // attn_v / ffn_down of layer l: Q6_K where the _M mix gives it more bits.
  DType MoreBitsType(int l) const {
    return s_.more_bits_mix && UseMoreBits(l, s_.n_layer) ? DType::kQ6_K : wt_;
  }

  void Layer(int l) {
    layer_ = l;
    const std::string b = "blk." + std::to_string(l) + ".";
    Norm(b + "attn_norm.weight", s_.n_embd);
    if (IsMla(s_)) {
      MlaAttention(b);
    } else {
      GqaAttention(b);
    }
    Norm(b + (s_.arch == "glm4moe" ? "post_attention_norm.weight" : "ffn_norm.weight"), s_.n_embd);
    if (!HasExperts(s_) || l < s_.n_layer_dense_lead) {
      Ffn(b, "", s_.n_ff);
    } else {
      Moe(b);
    }
    if (l >= s_.n_layer - s_.nextn_predict_layers) NextN(b);
  }

  void GqaAttention(const std::string& b) {
    const int64_t hd = HeadDim(s_), n_embd = s_.n_embd;
    const int64_t q_dim = s_.n_head * hd, kv_dim = s_.n_head_kv * hd;
    const bool bias = s_.arch == "qwen2" || s_.arch == "qwen2moe" || s_.arch == "glm4moe";
    const bool qk_norm = s_.arch == "qwen3" || s_.arch == "qwen3moe" || s_.qk_norm;
    Mat(b + "attn_q.weight", wt_, n_embd, q_dim, Sigma(0.25f, n_embd));
    if (bias) Bias(b + "attn_q.bias", q_dim);
    Mat(b + "attn_k.weight", wt_, n_embd, kv_dim, Sigma(0.25f, n_embd));
    if (bias) Bias(b + "attn_k.bias", kv_dim);
    Mat(b + "attn_v.weight", MoreBitsType(layer_), n_embd, kv_dim, Sigma(0.2f, n_embd));
    if (bias) Bias(b + "attn_v.bias", kv_dim);
    if (qk_norm) {
      Norm(b + "attn_q_norm.weight", hd);
      Norm(b + "attn_k_norm.weight", hd);
    }
    Mat(b + "attn_output.weight", wt_, q_dim, n_embd, Sigma(0.15f, q_dim));
  }

  // llama.cpp's converter layout: position_embd and token_types stay F32
  // (its always-F32 list); LayerNorms are weight 1 + N(0, 0.1), bias N(0, 0.1).
  std::vector<TensorPlan> Bert() {
    const int64_t n_embd = s_.n_embd, n_ff = s_.n_ff, n_vocab = VocabSize(s_);
    Mat("token_embd.weight", wt_, n_embd, n_vocab, 1.0f);
    p_.push_back(Drawn("token_types.weight", DType::kF32, {n_embd, 2}, 0.0f, 0.5f));
    p_.push_back(Drawn("position_embd.weight", DType::kF32, {n_embd, s_.n_ctx}, 0.0f, 0.5f));
    NormBias("token_embd_norm", n_embd);
    for (int l = 0; l < s_.n_layer; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      // Q and K softer than the decoders' (whose inputs are RMS-normed, not
      // LayerNormed with a bias): scores of order 1, not a near-argmax softmax.
      for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
        Mat(b + m + ".weight", wt_, n_embd, n_embd, Sigma(m[5] == 'v' ? 0.2f : 0.1f, n_embd));
        Bias(b + m + ".bias", n_embd);
      }
      Mat(b + "attn_output.weight", wt_, n_embd, n_embd, Sigma(0.15f, n_embd));
      Bias(b + "attn_output.bias", n_embd);
      NormBias(b + "attn_output_norm", n_embd);
      Mat(b + "ffn_up.weight", wt_, n_embd, n_ff, Sigma(0.3f, n_embd));
      Bias(b + "ffn_up.bias", n_ff);
      Mat(b + "ffn_down.weight", wt_, n_ff, n_embd, Sigma(0.15f, n_ff, 256.0));
      Bias(b + "ffn_down.bias", n_embd);
      NormBias(b + "layer_output_norm", n_embd);
    }
    if (s_.n_cls_out > 0) {
      // RoBERTa-style classification head: cls (dense, tanh), cls.output.
      Mat("cls.weight", wt_, n_embd, n_embd, Sigma(0.5f, n_embd));
      Bias("cls.bias", n_embd);
      Mat("cls.output.weight", wt_, n_embd, s_.n_cls_out, Sigma(1.0f, n_embd));
      Bias("cls.output.bias", s_.n_cls_out);
    }
    return std::move(p_);
  }
  void NormBias(const std::string& name, int64_t n) {
    Norm(name + ".weight", n);
    Bias(name + ".bias", n);
  }

  // q_b and kv_b are scaled from the q_lora 48 / kv_lora 32 of the synthetic
  // deepseek2 files, the rest from n_embd 128.
  void MlaAttention(const std::string& b) {
    const int64_t n_embd = s_.n_embd, n_head = s_.n_head, rope = s_.qk_rope_dim, nope = s_.qk_nope_dim;
    const int64_t v = s_.v_head_dim, kv_lora = s_.kv_lora_rank, q_lora = s_.q_lora_rank;
    if (q_lora > 0) {
      Mat(b + "attn_q_a.weight", wt_, n_embd, q_lora, Sigma(0.15f, n_embd));
      Norm(b + "attn_q_a_norm.weight", q_lora);
      Mat(b + "attn_q_b.weight", wt_, q_lora, n_head * (nope + rope), Sigma(0.25f, q_lora, 48.0));
    } else {
      Mat(b + "attn_q.weight", wt_, n_embd, n_head * (nope + rope), Sigma(0.25f, n_embd));
    }
    Mat(b + "attn_kv_a_mqa.weight", wt_, n_embd, kv_lora + rope, Sigma(0.15f, n_embd));
    Norm(b + "attn_kv_a_norm.weight", kv_lora);
    TensorPlan kv_b = Drawn(b + "attn_kv_b.weight", RowType(wt_, kv_lora), {kv_lora, n_head * (nope + v)}, 0.0f,
                            Sigma(0.25f, kv_lora, 32.0));
    if (!s_.mla_split_kv_b) {
      p_.push_back(std::move(kv_b));
    } else {
      TensorPlan kb = Drawn(b + "attn_k_b.weight", RowType(wt_, nope), {nope, kv_lora, n_head}, 0.0f, 0.0f);
      TensorPlan vb = Drawn(b + "attn_v_b.weight", RowType(wt_, kv_lora), {kv_lora, v, n_head}, 0.0f, 0.0f);
      for (TensorPlan* t : {&kb, &vb}) {
        t->sources = {kv_b};
        t->dim_a = nope;
        t->dim_b = v;
      }
      kb.derive = Derive::kKB;
      vb.derive = Derive::kVB;
      p_.push_back(std::move(kb));
      p_.push_back(std::move(vb));
    }
    Mat(b + "attn_output.weight", wt_, n_head * v, n_embd, Sigma(0.15f, n_head * v));
  }

  // ffn_{gate,up,down}<suffix> of width n_ff.
  void Ffn(const std::string& b, const std::string& suffix, int64_t n_ff) {
    const int64_t n_embd = s_.n_embd;
    Mat(b + "ffn_gate" + suffix + ".weight", wt_, n_embd, n_ff, Sigma(0.15f, n_embd));
    Mat(b + "ffn_up" + suffix + ".weight", wt_, n_embd, n_ff, Sigma(0.15f, n_embd));
    Mat(b + "ffn_down" + suffix + ".weight", suffix.empty() ? MoreBitsType(layer_) : wt_, n_ff, n_embd,
        Sigma(0.1f, n_ff, 256.0));
  }

  void Moe(const std::string& b) {
    const int64_t n_embd = s_.n_embd, n_exp = s_.n_expert, f = s_.n_ff_exp;
    const DType et = s_.expert_type.value_or(wt_);
    p_.push_back(Drawn(b + "ffn_gate_inp.weight", DType::kF32, {n_embd, n_exp}, 0.0f, Sigma(0.3f, n_embd)));
    if (s_.exp_probs_b) p_.push_back(Drawn(b + "exp_probs_b.bias", DType::kF32, {n_exp}, 0.0f, 0.1f));
    TensorPlan gate = Drawn(b + "ffn_gate_exps.weight", et, {n_embd, f, n_exp}, 0.0f, Sigma(0.15f, n_embd));
    TensorPlan up = Drawn(b + "ffn_up_exps.weight", et, {n_embd, f, n_exp}, 0.0f, Sigma(0.15f, n_embd));
    if (s_.merged_gate_up_exps) {
      TensorPlan gate_up = Drawn(b + "ffn_gate_up_exps.weight", et, {n_embd, 2 * f, n_exp}, 0.0f, 0.0f);
      gate_up.derive = Derive::kGateUp;
      gate_up.sources = {std::move(gate), std::move(up)};
      gate_up.dim_a = f;
      p_.push_back(std::move(gate_up));
    } else {
      p_.push_back(std::move(gate));
      p_.push_back(std::move(up));
    }
    p_.push_back(Drawn(b + "ffn_down_exps.weight", et, {f, n_embd, n_exp}, 0.0f, Sigma(0.1f, f, 256.0)));
    if (s_.arch == "qwen2moe" && s_.n_ff_shexp > 0) {
      p_.push_back(Drawn(b + "ffn_gate_inp_shexp.weight", DType::kF32, {n_embd}, 0.0f, Sigma(0.3f, n_embd)));
      Ffn(b, "_shexp", s_.n_ff_shexp);
    }
    if (HasSharedCount(s_) && s_.n_expert_shared > 0) Ffn(b, "_shexp", f * s_.n_expert_shared);
  }

  // glm4moe's multi-token-prediction head, carried by the trailing blocks and
  // skipped by the forward pass (shapes of llama.cpp's glm4-moe loader).
  void NextN(const std::string& b) {
    const int64_t n_embd = s_.n_embd, n_vocab = VocabSize(s_);
    Mat(b + "nextn.eh_proj.weight", wt_, 2 * n_embd, n_embd, Sigma(0.15f, 2 * n_embd));
    Norm(b + "nextn.enorm.weight", n_embd);
    Norm(b + "nextn.hnorm.weight", n_embd);
    Mat(b + "nextn.embed_tokens.weight", wt_, n_embd, n_vocab, 1.0f);
    Mat(b + "nextn.shared_head_head.weight", s_.output_type.value_or(wt_), n_embd, n_vocab, Sigma(0.7f, n_embd));
    Norm(b + "nextn.shared_head_norm.weight", n_embd);
  }

  const RandomModelSpec& s_;
  const DType wt_;
  int layer_ = 0;
  std::vector<TensorPlan> p_;
};

Status Invalid(const std::string& what) { return InvalidArgument("random model: " + what); }

Status ValidateExperts(const RandomModelSpec& s) {
  const std::string& a = s.arch;
  const bool moe_arch = a == "qwen2moe" || a == "qwen3moe" || a == "deepseek2" || a == "glm4moe";
  if (moe_arch && s.n_expert == 0) return Invalid(a + " needs n_expert > 0");
  if ((a == "qwen2" || a == "qwen3") && s.n_expert != 0) {
    return Invalid(a + " has no experts (use " + a + "moe)");
  }
  if (s.n_expert == 0) {
    if (s.n_expert_used || s.n_ff_exp || s.n_expert_shared || s.n_ff_shexp || s.n_layer_dense_lead ||
        s.exp_probs_b || s.n_expert_groups || s.n_group_used || s.merged_gate_up_exps || s.expert_type ||
        s.expert_weights_scale != 0.0f || s.expert_weights_norm || s.expert_gating_func) {
      return Invalid("expert fields are set but n_expert is 0");
    }
    return Status::Ok();
  }
  if (s.n_expert < 2 || s.n_expert > 512) {
    return Invalid("n_expert " + std::to_string(s.n_expert) + " is outside [2, 512]");
  }
  if (s.n_expert_used < 1 || s.n_expert_used > s.n_expert) {
    return Invalid("n_expert_used " + std::to_string(s.n_expert_used) + " is outside [1, n_expert " +
                   std::to_string(s.n_expert) + "]");
  }
  if (s.n_ff_exp < 1 || s.n_ff_exp > (1 << 20)) return Invalid("n_ff_exp must be in [1, 2^20]");
  const bool ds = HasSharedCount(s);
  if (s.n_expert_shared != 0 && !ds) return Invalid("n_expert_shared is for deepseek2 / glm4moe (qwen2moe: n_ff_shexp)");
  if (s.n_expert_shared < 0 || s.n_expert_shared > 64) return Invalid("n_expert_shared must be in [0, 64]");
  if (s.n_ff_shexp != 0 && a != "qwen2moe") return Invalid("n_ff_shexp is for qwen2moe (deepseek2 / glm4moe: n_expert_shared)");
  if (s.n_ff_shexp < 0 || s.n_ff_shexp > (1 << 20)) return Invalid("n_ff_shexp must be in [0, 2^20]");
  if (s.n_layer_dense_lead != 0 && !ds) return Invalid("n_layer_dense_lead is for deepseek2 / glm4moe");
  if (s.n_layer_dense_lead < 0 || s.n_layer_dense_lead >= s.n_layer - s.nextn_predict_layers) {
    return Invalid("n_layer_dense_lead " + std::to_string(s.n_layer_dense_lead) +
                   " leaves no MoE layer among the " + std::to_string(s.n_layer - s.nextn_predict_layers) +
                   " forward layers");
  }
  if (!ds && (s.exp_probs_b || s.expert_weights_norm || s.expert_weights_scale != 0.0f ||
              s.expert_gating_func != 0)) {
    return Invalid(a + " fixes its routing (softmax; renormalised: " +
                   std::string(a == "qwen2moe" ? "no" : "yes") +
                   "): exp_probs_b, expert_weights_norm/scale and expert_gating_func are for deepseek2 / glm4moe");
  }
  if (s.expert_gating_func < 0 || s.expert_gating_func > 2) {
    return Invalid("expert_gating_func " + std::to_string(s.expert_gating_func) + " is not 1 (softmax) or 2 (sigmoid)");
  }
  if (!(s.expert_weights_scale >= 0.0f) || !std::isfinite(s.expert_weights_scale)) {
    return Invalid("expert_weights_scale must be finite and >= 0");
  }
  if (s.n_group_used != 0 && s.n_expert_groups == 0) return Invalid("n_group_used is set without n_expert_groups");
  if (s.n_expert_groups != 0) {
    if (a != "deepseek2") return Invalid("expert groups are for deepseek2");
    if (s.n_expert_groups < 1 || s.n_expert % s.n_expert_groups != 0) {
      return Invalid("n_expert_groups " + std::to_string(s.n_expert_groups) + " does not divide n_expert " +
                     std::to_string(s.n_expert));
    }
    const int per_group = s.n_expert / s.n_expert_groups;
    if (s.n_expert_groups > 1 && per_group < 2) {
      return Invalid("expert groups need >= 2 experts each (a group scores by its top-2 sum)");
    }
    if (s.n_group_used < 1 || s.n_group_used > s.n_expert_groups) {
      return Invalid("n_group_used " + std::to_string(s.n_group_used) + " is outside [1, n_expert_groups " +
                     std::to_string(s.n_expert_groups) + "]");
    }
    if (s.n_expert_used > s.n_group_used * per_group) {
      return Invalid("n_expert_used " + std::to_string(s.n_expert_used) + " exceeds the " +
                     std::to_string(s.n_group_used * per_group) + " experts of the n_group_used groups");
    }
  }
  const DType et = s.expert_type.value_or(s.weight_type);
  const DTypeInfo& info = GetDTypeInfo(et);
  for (auto [what, n] : {std::pair{"n_embd", s.n_embd}, std::pair{"n_ff_exp", s.n_ff_exp}}) {
    if (n % info.block_size != 0) {
      return Invalid(std::string(what) + " " + std::to_string(n) + " is not a multiple of the expert type " +
                     info.name + "'s block size " + std::to_string(info.block_size));
    }
  }
  return Status::Ok();
}

Status ValidateMla(const RandomModelSpec& s) {
  if (!IsMla(s)) {
    if (s.q_lora_rank || s.kv_lora_rank || s.qk_rope_dim || s.qk_nope_dim || s.v_head_dim) {
      return Invalid("MLA fields (q/kv_lora_rank, qk_rope/nope_dim, v_head_dim) are for deepseek2");
    }
    return Status::Ok();
  }
  auto in = [](const char* what, int v, int lo, int hi) -> Status {
    if (v < lo || v > hi) {
      return Invalid(std::string("deepseek2 ") + what + " " + std::to_string(v) + " is outside [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return Status::Ok();
  };
  PAGODA_RETURN_IF_ERROR(in("kv_lora_rank", s.kv_lora_rank, 1, 1 << 16));
  PAGODA_RETURN_IF_ERROR(in("q_lora_rank", s.q_lora_rank, 0, 1 << 16));
  PAGODA_RETURN_IF_ERROR(in("qk_rope_dim", s.qk_rope_dim, 2, 4096));
  PAGODA_RETURN_IF_ERROR(in("qk_nope_dim", s.qk_nope_dim, 1, 4096));
  PAGODA_RETURN_IF_ERROR(in("v_head_dim", s.v_head_dim, 1, 4096));
  if (s.qk_rope_dim % 2 != 0) return Invalid("deepseek2 qk_rope_dim " + std::to_string(s.qk_rope_dim) + " is odd");
  if (s.head_dim != 0 || s.n_rot != 0) return Invalid("deepseek2 sizes its heads by qk_nope_dim / qk_rope_dim / v_head_dim, not head_dim / n_rot");
  if (!s.rope_freq_factors.empty()) return Invalid("rope_freq_factors are not supported for deepseek2");
  return Status::Ok();
}

Status ValidateRest(const RandomModelSpec& s) {
  if (s.qk_norm && s.arch != "glm4moe" && s.arch != "qwen3" && s.arch != "qwen3moe") {
    return Invalid("qk_norm is for glm4moe (qwen3 / qwen3moe always have it)");
  }
  if (s.nextn_predict_layers != 0 && s.arch != "glm4moe") return Invalid("nextn_predict_layers is for glm4moe");
  if (s.nextn_predict_layers < 0 || s.nextn_predict_layers >= s.n_layer) {
    return Invalid("nextn_predict_layers " + std::to_string(s.nextn_predict_layers) + " must be below n_layer " +
                   std::to_string(s.n_layer));
  }
  if (!IsMla(s)) {
    const int hd = HeadDim(s), rot = RopeDims(s);
    if (rot < 2 || rot > hd || rot % 2 != 0) {
      return Invalid("rope dimension count " + std::to_string(rot) + " must be even and in [2, head_dim " +
                     std::to_string(hd) + "]");
    }
    if (!s.rope_freq_factors.empty() && rot != hd) return Invalid("rope_freq_factors need n_rot = head_dim");
  }
  // deepseek2 always writes yarn_log_multiplier; without a factor it is inert.
  const bool yarn_fields = s.rope_scaling_orig_ctx != 0 || s.yarn_beta_fast != 0.0f || s.yarn_beta_slow != 0.0f ||
                           (!IsMla(s) && s.yarn_log_multiplier != 0.0f);
  if (s.rope_scaling_factor == 0.0f) {
    if (yarn_fields) return Invalid("YaRN fields are set without rope_scaling_factor");
    return Status::Ok();
  }
  if (!IsMla(s)) return Invalid("YaRN rope scaling is implemented for deepseek2 only");
  if (!(s.rope_scaling_factor >= 1.0f) || !std::isfinite(s.rope_scaling_factor)) {
    return Invalid("rope_scaling_factor must be >= 1");
  }
  if (s.rope_scaling_orig_ctx < 1) return Invalid("YaRN needs rope_scaling_orig_ctx (original_context_length) > 0");
  for (float v : {s.yarn_log_multiplier, s.yarn_beta_fast, s.yarn_beta_slow}) {
    if (!(v >= 0.0f) || !std::isfinite(v)) return Invalid("yarn_log_multiplier / yarn_beta_* must be finite and >= 0");
  }
  return Status::Ok();
}

}  // namespace

int64_t TokenizerVocabSize(const GgufMetadata& md) {
  const GgufValue* v = md.Find("tokenizer.ggml.tokens");
  const GgufArray* a = v ? v->AsArray() : nullptr;
  return a ? int64_t(a->items.size()) : -1;
}

int VocabSize(const RandomModelSpec& s) {
  const int64_t n = TokenizerVocabSize(s.tokenizer);
  return n >= 0 ? int(n) : s.n_vocab;
}

bool HasExperts(const RandomModelSpec& s) { return s.n_expert > 0; }

std::vector<TensorPlan> PlanTensors(const RandomModelSpec& s) { return Planner(s).Plan(); }

// bert: the keys llama.cpp's converter writes for BertModel (no RoPE; the
// layer-norm epsilon from rms_eps; attention.causal false).
void WriteBertMetadata(const RandomModelSpec& s, GgufMetadata& md) {
  md.Set("general.architecture", std::string("bert"));
  md.Set("general.name", s.name);
  md.Set("general.file_type", FileType(s.weight_type, false));
  if (IsQuantized(s.weight_type)) md.Set("general.quantization_version", uint32_t{2});
  md.Set("bert.context_length", uint32_t(s.n_ctx));
  md.Set("bert.embedding_length", uint32_t(s.n_embd));
  md.Set("bert.block_count", uint32_t(s.n_layer));
  md.Set("bert.feed_forward_length", uint32_t(s.n_ff));
  md.Set("bert.attention.head_count", uint32_t(s.n_head));
  md.Set("bert.attention.layer_norm_epsilon", s.rms_eps);
  md.Set("bert.attention.causal", false);
  if (s.pooling_type >= 0) md.Set("bert.pooling_type", uint32_t(s.pooling_type));
  md.Set("bert.vocab_size", uint32_t(VocabSize(s)));
}

void WriteMetadata(const RandomModelSpec& s, GgufMetadata& md) {
  if (s.arch == "bert") return WriteBertMetadata(s, md);
  const std::string& a = s.arch;
  const int hd = HeadDim(s);
  const bool mla = IsMla(s), moe = HasExperts(s);
  md.Set("general.architecture", a);
  md.Set("general.name", s.name);
  const DType main_type = moe ? s.expert_type.value_or(s.weight_type) : s.weight_type;
  md.Set("general.file_type", FileType(main_type, s.more_bits_mix));
  if (IsQuantized(s.weight_type) || IsQuantized(main_type)) md.Set("general.quantization_version", uint32_t{2});
  md.Set(a + ".context_length", uint32_t(s.n_ctx));
  md.Set(a + ".embedding_length", uint32_t(s.n_embd));
  md.Set(a + ".block_count", uint32_t(s.n_layer));
  // llama (Mixtral) sizes its experts by feed_forward_length.
  md.Set(a + ".feed_forward_length", uint32_t(moe && a == "llama" ? s.n_ff_exp : s.n_ff));
  md.Set(a + ".attention.head_count", uint32_t(s.n_head));
  if (mla) {
    // Current layout: one latent "KV head" of kv_lora + rope (K) and kv_lora
    // (V); the per-head sizes move to the *_mla keys.
    const int nope_rope = s.qk_nope_dim + s.qk_rope_dim;
    md.Set(a + ".attention.head_count_kv", uint32_t(s.mla_split_kv_b ? 1 : s.n_head));
    md.Set(a + ".attention.key_length", uint32_t(s.mla_split_kv_b ? s.kv_lora_rank + s.qk_rope_dim : nope_rope));
    md.Set(a + ".attention.value_length", uint32_t(s.mla_split_kv_b ? s.kv_lora_rank : s.v_head_dim));
    if (s.mla_split_kv_b) {
      md.Set(a + ".attention.key_length_mla", uint32_t(nope_rope));
      md.Set(a + ".attention.value_length_mla", uint32_t(s.v_head_dim));
    }
  } else {
    md.Set(a + ".attention.head_count_kv", uint32_t(s.n_head_kv));
    if (s.n_embd % s.n_head != 0 || hd != s.n_embd / s.n_head) {
      md.Set(a + ".attention.key_length", uint32_t(hd));
      md.Set(a + ".attention.value_length", uint32_t(hd));
    }
  }
  md.Set(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  md.Set(a + ".rope.freq_base", s.rope_base);
  md.Set(a + ".rope.dimension_count", uint32_t(mla ? s.qk_rope_dim : RopeDims(s)));
  md.Set(a + ".vocab_size", uint32_t(VocabSize(s)));
  if (moe) {
    md.Set(a + ".expert_count", uint32_t(s.n_expert));
    md.Set(a + ".expert_used_count", uint32_t(s.n_expert_used));
    if (a != "llama") md.Set(a + ".expert_feed_forward_length", uint32_t(s.n_ff_exp));
    if (a == "qwen2moe" && s.n_ff_shexp > 0) {
      md.Set(a + ".expert_shared_feed_forward_length", uint32_t(s.n_ff_shexp));
    }
    if (HasSharedCount(s)) {
      md.Set(a + ".expert_shared_count", uint32_t(s.n_expert_shared));
      md.Set(a + ".leading_dense_block_count", uint32_t(s.n_layer_dense_lead));
      // deepseek2 loaders before 2025 require the scale key.
      if (a == "deepseek2" || s.expert_weights_scale != 0.0f) {
        md.Set(a + ".expert_weights_scale", s.expert_weights_scale != 0.0f ? s.expert_weights_scale : 1.0f);
      }
      md.Set(a + ".expert_weights_norm", s.expert_weights_norm);
      md.Set(a + ".expert_gating_func", uint32_t(GatingFunc(s)));
    }
    if (s.n_expert_groups > 0) {
      md.Set(a + ".expert_group_count", uint32_t(s.n_expert_groups));
      md.Set(a + ".expert_group_used_count", uint32_t(s.n_group_used));
    }
  }
  if (s.nextn_predict_layers > 0) md.Set(a + ".nextn_predict_layers", uint32_t(s.nextn_predict_layers));
  if (mla) {
    if (s.q_lora_rank > 0) md.Set(a + ".attention.q_lora_rank", uint32_t(s.q_lora_rank));
    md.Set(a + ".attention.kv_lora_rank", uint32_t(s.kv_lora_rank));
    if (s.rope_scaling_factor > 0.0f) {
      md.Set(a + ".rope.scaling.type", std::string("yarn"));
      md.Set(a + ".rope.scaling.factor", s.rope_scaling_factor);
      md.Set(a + ".rope.scaling.original_context_length", uint32_t(s.rope_scaling_orig_ctx));
      if (s.yarn_beta_fast > 0.0f) md.Set(a + ".rope.scaling.yarn_beta_fast", s.yarn_beta_fast);
      if (s.yarn_beta_slow > 0.0f) md.Set(a + ".rope.scaling.yarn_beta_slow", s.yarn_beta_slow);
    }
    // llama.cpp before 2025 requires the key; without scaling it has no effect.
    md.Set(a + ".rope.scaling.yarn_log_multiplier", s.yarn_log_multiplier);
  }
}

Status ValidateMoeMla(const RandomModelSpec& s) {
  PAGODA_RETURN_IF_ERROR(ValidateExperts(s));
  PAGODA_RETURN_IF_ERROR(ValidateMla(s));
  return ValidateRest(s);
}

}  // namespace pagoda::random_model

namespace pagoda {

std::vector<std::string> RandomModelPresetNames() {
  return {"qwen3-30b-a3b", "kanana-2-30b-a3b", "qwen2moe-a2.7b", "bert-base", "bert-base-reranker"};
}

Status ApplyRandomModelPreset(const std::string& name, RandomModelSpec& s) {
  if (name == "qwen3-30b-a3b") {
    // Qwen/Qwen3-30B-A3B config.json.
    s.arch = "qwen3moe";
    s.n_embd = 2048, s.n_layer = 48, s.n_head = 32, s.n_head_kv = 4, s.head_dim = 128;
    s.n_ff = 6144, s.n_expert = 128, s.n_expert_used = 8, s.n_ff_exp = 768;
    s.n_vocab = 151936, s.n_ctx = 40960, s.rope_base = 1e6f, s.rms_eps = 1e-6f, s.rope_neox = true;
  } else if (name == "kanana-2-30b-a3b") {
    // Kanana-2-30B-A3B: 48 layers, 1 leading dense, 128 experts with 6 used
    // and 2 shared, MLA without query LoRA, vocab 128256 (kakao/kanana-2
    // README; llama.cpp treats it as deepseek2 "lite"). Its config.json was
    // not at hand: the MLA sizes are DeepSeek-V2-Lite's (n_embd 2048, 16 heads,
    // kv_lora 512, rope 64, nope 128, v 128), expert FFN 768 makes 30B / 3B
    // active, the dense FFN 6144 and V3-style routing (sigmoid + selection
    // bias, renormalised) are assumptions.
    s.arch = "deepseek2";
    s.n_embd = 2048, s.n_layer = 48, s.n_head = 16, s.n_head_kv = 16, s.head_dim = 0;
    s.n_ff = 6144, s.n_expert = 128, s.n_expert_used = 6, s.n_expert_shared = 2, s.n_ff_exp = 768;
    s.n_layer_dense_lead = 1, s.q_lora_rank = 0, s.kv_lora_rank = 512, s.qk_rope_dim = 64;
    s.qk_nope_dim = 128, s.v_head_dim = 128, s.mla_split_kv_b = true;
    s.expert_gating_func = 2, s.exp_probs_b = true, s.expert_weights_norm = true, s.expert_weights_scale = 1.0f;
    s.n_vocab = 128256, s.n_ctx = 32768, s.rope_base = 10000.0f, s.rms_eps = 1e-6f;
  } else if (name == "qwen2moe-a2.7b") {
    // The qwen2moe benchmark file of ANCHORS.md (5.33 B parameters, ~1.0 B active).
    s.arch = "qwen2moe";
    s.n_embd = 2048, s.n_layer = 16, s.n_head = 16, s.n_head_kv = 4, s.head_dim = 0;
    s.n_ff = 5632, s.n_expert = 64, s.n_expert_used = 8, s.n_ff_exp = 768, s.n_ff_shexp = 2048;
    s.n_vocab = 32000, s.n_ctx = 4096, s.rope_base = 1e6f, s.rms_eps = 1e-6f, s.rope_neox = true;
  } else if (name == "bert-base" || name == "bert-base-reranker") {
    // bert-base-uncased / BAAI bge-base-en-v1.5 (embedding, CLS pooling) and
    // bge-reranker-base's shape (cross-encoder: rank pooling, one score).
    s.arch = "bert";
    s.n_embd = 768, s.n_layer = 12, s.n_head = 12, s.n_head_kv = 12, s.head_dim = 0, s.n_ff = 3072;
    s.n_vocab = 30522, s.n_ctx = 512, s.rms_eps = 1e-12f;
    const bool rerank = name == "bert-base-reranker";
    s.pooling_type = rerank ? 4 : 2;
    s.n_cls_out = rerank ? 1 : 0;
  } else {
    std::string names;
    for (const std::string& n : RandomModelPresetNames()) names += (names.empty() ? "" : ", ") + n;
    return InvalidArgument("unknown model preset '" + name + "' (" + names + ")");
  }
  return Status::Ok();
}

}  // namespace pagoda
