// A float64 scalar forward pass of the decoder architectures (llama with or
// without experts, qwen2, qwen3, qwen2moe, qwen3moe, deepseek2 in both MLA
// layouts, glm4moe), written independently of src/model: it reads the GGUF
// metadata itself, dequantizes every weight with DequantizeRow and runs plain
// loops with double accumulation over the whole token sequence (no KV cache).
// The MoE routing and MLA parts live in reference_forward_moe.h. It is the
// yardstick for the engine in model_reference_test.cc and
// moe_model_reference_test.cc, and is itself checked against llama.cpp in
// moe_reference_golden_test.cc. Header-only because the test build compiles
// only *_test.cc files of this folder.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/cpu/quantize.h"
#include "model/reference_forward_moe.h"

namespace pagoda::testing {

class ReferenceModel {
 public:
  // Aborts the test binary on a malformed file: only used on files the test wrote.
  explicit ReferenceModel(const GgufFile& f) : f_(f) {
    const GgufMetadata& m = f.metadata();
    arch_ = m.GetString("general.architecture").value();
    auto key = [&](const char* k) { return arch_ + "." + k; };
    n_embd_ = m.GetInt(key("embedding_length")).value();
    n_layer_ = m.GetInt(key("block_count")).value();
    n_head_ = m.GetInt(key("attention.head_count")).value();
    n_head_kv_ = m.GetIntOr(key("attention.head_count_kv"), n_head_).value();
    head_dim_ = m.GetIntOr(key("attention.key_length"), n_embd_ / n_head_).value();
    head_dim_v_ = m.GetIntOr(key("attention.value_length"), head_dim_).value();
    n_rot_ = m.GetIntOr(key("rope.dimension_count"), head_dim_).value();
    eps_ = m.GetFloatOr(key("attention.layer_norm_rms_epsilon"), 1e-5).value();
    base_ = m.GetFloatOr(key("rope.freq_base"), 10000.0).value();
    const std::string scaling = m.GetStringOr(key("rope.scaling.type"), "none").value();
    if (scaling == "linear") {
      freq_scale_ = 1.0 / m.GetFloatOr(key("rope.scaling.factor"), 1.0).value();
    }
    neox_ = arch_ == "qwen2" || arch_ == "qwen3" || arch_ == "qwen2moe" || arch_ == "qwen3moe" || arch_ == "glm4moe";
    if (f.FindTensor("rope_freqs.weight")) freq_factors_ = Vec("rope_freqs.weight");
    rope_.n_dims = n_rot_;
    rope_.base = base_;
    rope_.freq_scale = freq_scale_;
    rope_.freq_factors = freq_factors_;
    if (scaling == "yarn") {
      const double factor = m.GetFloatOr(key("rope.scaling.factor"), 1.0).value();
      rope_.SetYarn(factor, m.GetIntOr(key("rope.scaling.original_context_length"), 0).value(),
                    m.GetFloatOr(key("rope.scaling.yarn_beta_fast"), 32.0).value(),
                    m.GetFloatOr(key("rope.scaling.yarn_beta_slow"), 1.0).value());
      yarn_factor_ = factor;
    }
    n_layer_forward_ = n_layer_ - m.GetIntOr(key("nextn_predict_layers"), 0).value();
    ReadMoe(m);
    if (arch_ == "deepseek2") ReadMla(m);
    embd_ = Mat("token_embd.weight");
    n_vocab_ = static_cast<int64_t>(embd_.size()) / n_embd_;
    out_ = f.FindTensor("output.weight") ? Mat("output.weight") : embd_;
    out_norm_ = Vec("output_norm.weight");
  }

  int64_t n_vocab() const { return n_vocab_; }

  // Logits of every position of `tokens` (one sequence from position 0):
  // [tokens.size()][n_vocab]. `routing`, when given, receives how close the
  // expert choices came to ties.
  std::vector<std::vector<double>> Forward(const std::vector<int32_t>& tokens,
                                           ref::RoutingStats* routing = nullptr) const {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t E = n_embd_;
    std::vector<std::vector<double>> x(n);
    for (int64_t t = 0; t < n; ++t) {
      x[t].assign(embd_.begin() + tokens[t] * E, embd_.begin() + (tokens[t] + 1) * E);
    }
    for (int64_t l = 0; l < n_layer_forward_; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const auto attn_norm = Vec(p + "attn_norm.weight");
      std::vector<std::vector<double>> xn(n);
      for (int64_t t = 0; t < n; ++t) xn[t] = Norm(x[t], attn_norm);
      const auto o = arch_ == "deepseek2" ? ref::MlaAttention(xn, MlaLayer(p), rope_, eps_, mla_kq_scale_)
                                          : GqaAttention(p, xn);
      const bool glm = arch_ == "glm4moe";
      const auto ffn_norm = Vec(p + (glm ? "post_attention_norm.weight" : "ffn_norm.weight"));
      const bool moe = f_.FindTensor(p + "ffn_gate_inp.weight") != nullptr;
      const MoeLayerWeights mw = moe ? MoeLayer(p) : MoeLayerWeights{};
      const DenseWeights dw = moe ? DenseWeights{} : DenseLayer(p, "");
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t i = 0; i < E; ++i) x[t][i] += o[t][i];
        const auto xf = Norm(x[t], ffn_norm);
        const auto y = moe ? MoeFfn(mw, xf, routing) : dw.Apply(xf);
        for (int64_t i = 0; i < E; ++i) x[t][i] += y[i];
      }
    }
    std::vector<std::vector<double>> logits(n);
    for (int64_t t = 0; t < n; ++t) logits[t] = MatVec(out_, Norm(x[t], out_norm_), n_vocab_);
    return logits;
  }

 private:
  struct DenseWeights {
    std::vector<double> gate, up, down;
    int64_t n_ff = 0;
    std::vector<double> Apply(const std::vector<double>& x) const {
      return ref::SwiGlu(x, gate, 0, up, 0, down, 0, n_ff);
    }
  };
  DenseWeights DenseLayer(const std::string& p, const std::string& suffix) const {
    DenseWeights d{Mat(p + "ffn_gate" + suffix + ".weight"), Mat(p + "ffn_up" + suffix + ".weight"),
                   Mat(p + "ffn_down" + suffix + ".weight"), 0};
    d.n_ff = static_cast<int64_t>(d.gate.size()) / n_embd_;
    return d;
  }

  struct MoeLayerWeights {
    std::vector<double> gate_inp, probs_b, gate, up, down, gate_inp_shexp;
    bool has_bias = false, merged = false, has_shared = false;
    int64_t n_ff = 0;
    DenseWeights shared;
  };
  MoeLayerWeights MoeLayer(const std::string& p) const {
    MoeLayerWeights w;
    w.gate_inp = Mat(p + "ffn_gate_inp.weight");
    if ((w.has_bias = f_.FindTensor(p + "exp_probs_b.bias") != nullptr)) w.probs_b = Vec(p + "exp_probs_b.bias");
    w.merged = f_.FindTensor(p + "ffn_gate_up_exps.weight") != nullptr;
    if (w.merged) {
      w.gate = Mat(p + "ffn_gate_up_exps.weight");
      w.n_ff = f_.FindTensor(p + "ffn_gate_up_exps.weight")->ne[1] / 2;
    } else {
      w.gate = Mat(p + "ffn_gate_exps.weight");
      w.up = Mat(p + "ffn_up_exps.weight");
      w.n_ff = f_.FindTensor(p + "ffn_gate_exps.weight")->ne[1];
    }
    w.down = Mat(p + "ffn_down_exps.weight");
    if ((w.has_shared = f_.FindTensor(p + "ffn_gate_shexp.weight") != nullptr)) w.shared = DenseLayer(p, "_shexp");
    if (f_.FindTensor(p + "ffn_gate_inp_shexp.weight")) w.gate_inp_shexp = Vec(p + "ffn_gate_inp_shexp.weight");
    return w;
  }
  // Routed experts plus the shared expert (qwen2moe: gated by
  // sigmoid(gate_inp_shexp . x)).
  std::vector<double> MoeFfn(const MoeLayerWeights& w, const std::vector<double>& x,
                             ref::RoutingStats* routing) const {
    const auto logits = MatVec(w.gate_inp, x, routing_.n_expert);
    const ref::Route r = ref::RouteToken(logits, w.has_bias ? &w.probs_b : nullptr, routing_, routing);
    ref::ExpertWeights ew{&w.gate, w.merged ? &w.gate : &w.up, &w.down, w.merged, w.n_ff};
    auto out = ref::RoutedExperts(x, r, ew);
    if (w.has_shared) {
      const auto s = w.shared.Apply(x);
      double g = 1.0;
      if (!w.gate_inp_shexp.empty()) {
        double d = 0.0;
        for (size_t i = 0; i < x.size(); ++i) d += w.gate_inp_shexp[i] * x[i];
        g = ref::Sigmoid(d);
      }
      for (size_t i = 0; i < out.size(); ++i) out[i] += g * s[i];
    }
    return out;
  }
  // Routing as each architecture defines it: llama (Mixtral) and qwen3moe
  // renormalise the top-k softmax weights, qwen2moe does not; deepseek2 and
  // glm4moe read gating, renormalisation and scale from the file (defaults:
  // softmax for deepseek2, sigmoid for glm4moe, no renormalisation).
  void ReadMoe(const GgufMetadata& m) {
    auto key = [&](const char* k) { return arch_ + "." + k; };
    routing_.n_expert = m.GetIntOr(key("expert_count"), 0).value();
    routing_.n_used = m.GetIntOr(key("expert_used_count"), 0).value();
    const bool ds = arch_ == "deepseek2" || arch_ == "glm4moe";
    const int64_t gating = m.GetIntOr(key("expert_gating_func"), arch_ == "glm4moe" ? 2 : 1).value();
    routing_.sigmoid = ds && gating == 2;
    if (ds) {
      routing_.norm = m.GetBoolOr(key("expert_weights_norm"), false).value();
      routing_.scale = m.GetFloatOr(key("expert_weights_scale"), 0.0).value();
    } else {
      routing_.norm = arch_ != "qwen2moe";
    }
    routing_.n_groups = m.GetIntOr(key("expert_group_count"), 0).value();
    routing_.n_group_used = m.GetIntOr(key("expert_group_used_count"), 0).value();
  }

  // GQA attention (llama, qwen*, glm4moe) of the normed inputs: [n][n_embd].
  std::vector<std::vector<double>> GqaAttention(const std::string& p, const std::vector<std::vector<double>>& xn) const {
    const int64_t n = static_cast<int64_t>(xn.size());
    const auto wq = Mat(p + "attn_q.weight"), wk = Mat(p + "attn_k.weight");
    const auto wv = Mat(p + "attn_v.weight"), wo = Mat(p + "attn_output.weight");
    const int64_t qw = n_head_ * head_dim_, kw = n_head_kv_ * head_dim_, vw = n_head_kv_ * head_dim_v_;
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      q[t] = MatVec(wq, xn[t], qw);
      k[t] = MatVec(wk, xn[t], kw);
      v[t] = MatVec(wv, xn[t], vw);
      AddOptionalBias(q[t], p + "attn_q.bias");
      AddOptionalBias(k[t], p + "attn_k.bias");
      AddOptionalBias(v[t], p + "attn_v.bias");
      if (f_.FindTensor(p + "attn_q_norm.weight")) {
        HeadNorm(q[t], Vec(p + "attn_q_norm.weight"));
        HeadNorm(k[t], Vec(p + "attn_k_norm.weight"));
      }
      Rope(q[t], t);
      Rope(k[t], t);
    }
    const int64_t group = n_head_ / n_head_kv_;
    std::vector<std::vector<double>> out(n);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> attn(n_head_ * head_dim_v_, 0.0);
      for (int64_t h = 0; h < n_head_; ++h) {
        const int64_t g = h / group;
        std::vector<double> s(t + 1);
        double mx = -1e300;
        for (int64_t j = 0; j <= t; ++j) {
          double d = 0.0;
          for (int64_t i = 0; i < head_dim_; ++i) d += q[t][h * head_dim_ + i] * k[j][g * head_dim_ + i];
          s[j] = d / std::sqrt(static_cast<double>(head_dim_));
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = 0; j <= t; ++j) {
          for (int64_t i = 0; i < head_dim_v_; ++i) {
            attn[h * head_dim_v_ + i] += s[j] / sum * v[j][g * head_dim_v_ + i];
          }
        }
      }
      out[t] = MatVec(wo, attn, n_embd_);
      AddOptionalBias(out[t], p + "attn_output.bias");
    }
    return out;
  }

  // deepseek2: the MLA sizes from either layout's keys. Current layout:
  // key_length_mla = nope + rope, value_length_mla = v (key_length /
  // value_length then describe the latent); early: key_length / value_length.
  void ReadMla(const GgufMetadata& m) {
    auto key = [&](const char* k) { return arch_ + "." + k; };
    mla_.n_head = n_head_;
    mla_.kv_lora = m.GetInt(key("attention.kv_lora_rank")).value();
    mla_.q_lora = m.GetIntOr(key("attention.q_lora_rank"), 0).value();
    mla_.rope = n_rot_;
    const bool current = m.Has(key("attention.key_length_mla"));
    const int64_t qk = current ? m.GetInt(key("attention.key_length_mla")).value() : head_dim_;
    mla_.nope = qk - mla_.rope;
    mla_.v = current ? m.GetInt(key("attention.value_length_mla")).value() : head_dim_v_;
    mla_kq_scale_ = ref::YarnKqScale(qk, yarn_factor_,
                                     m.GetFloatOr(key("rope.scaling.yarn_log_multiplier"), 0.0).value());
  }
  ref::MlaWeights MlaLayer(const std::string& p) const {
    ref::MlaWeights w = mla_;
    if (f_.FindTensor(p + "attn_q_a.weight")) {
      w.q_lora = f_.FindTensor(p + "attn_q_a.weight")->ne[1];
      w.q_a = Mat(p + "attn_q_a.weight");
      w.q_a_norm = Vec(p + "attn_q_a_norm.weight");
      w.q_b = Mat(p + "attn_q_b.weight");
    } else {
      w.q_lora = 0;
      w.q = Mat(p + "attn_q.weight");
    }
    w.kv_a = Mat(p + "attn_kv_a_mqa.weight");
    w.kv_a_norm = Vec(p + "attn_kv_a_norm.weight");
    w.wo = Mat(p + "attn_output.weight");
    const int64_t L = w.kv_lora, nope = w.nope, v = w.v;
    w.uk.assign(w.n_head, std::vector<double>(nope * L));
    w.uv.assign(w.n_head, std::vector<double>(v * L));
    if (f_.FindTensor(p + "attn_kv_b.weight")) {
      // [n_head * (nope + v) rows][kv_lora]: per head W_UK rows, then W_UV rows.
      const auto kv_b = Mat(p + "attn_kv_b.weight");
      for (int64_t h = 0; h < w.n_head; ++h) {
        const double* base = kv_b.data() + h * (nope + v) * L;
        std::copy(base, base + nope * L, w.uk[h].begin());
        std::copy(base + nope * L, base + (nope + v) * L, w.uv[h].begin());
      }
    } else {
      // attn_k_b {nope, kv_lora, n_head}: per head kv_lora rows of nope,
      // the transpose of W_UK[h]; attn_v_b {kv_lora, v, n_head}: W_UV[h].
      const auto k_b = Mat(p + "attn_k_b.weight"), v_b = Mat(p + "attn_v_b.weight");
      for (int64_t h = 0; h < w.n_head; ++h) {
        for (int64_t c = 0; c < L; ++c) {
          for (int64_t i = 0; i < nope; ++i) w.uk[h][i * L + c] = k_b[(h * L + c) * nope + i];
        }
        std::copy(v_b.begin() + h * v * L, v_b.begin() + (h + 1) * v * L, w.uv[h].begin());
      }
    }
    return w;
  }

  // Whole tensor dequantized row by row, as double.
  std::vector<double> Mat(const std::string& name) const {
    const TensorView t = f_.GetTensor(name).value();
    std::vector<float> row(t.ne[0]);
    std::vector<double> out;
    out.reserve(t.elements());
    for (int64_t r = 0; r < t.rows(); ++r) {
      PAGODA_CHECK(kernels::DequantizeRow(t.type, t.row(r), row.data(), t.ne[0]).ok());
      out.insert(out.end(), row.begin(), row.end());
    }
    return out;
  }
  std::vector<double> Vec(const std::string& name) const { return Mat(name); }
  // y = W x for W [n_out rows][x.size() cols].
  static std::vector<double> MatVec(const std::vector<double>& w, const std::vector<double>& x,
                                    int64_t n_out) {
    const int64_t n_in = static_cast<int64_t>(x.size());
    std::vector<double> y(n_out, 0.0);
    for (int64_t r = 0; r < n_out; ++r) {
      double acc = 0.0;
      for (int64_t i = 0; i < n_in; ++i) acc += w[r * n_in + i] * x[i];
      y[r] = acc;
    }
    return y;
  }
  std::vector<double> Norm(const std::vector<double>& x, const std::vector<double>& w) const {
    double ss = 0.0;
    for (double v : x) ss += v * v;
    const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps_);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
    return y;
  }
  void HeadNorm(std::vector<double>& x, const std::vector<double>& w) const {
    for (size_t h = 0; h < x.size() / head_dim_; ++h) {
      std::vector<double> head(x.begin() + h * head_dim_, x.begin() + (h + 1) * head_dim_);
      head = Norm(head, w);
      std::copy(head.begin(), head.end(), x.begin() + h * head_dim_);
    }
  }
  void AddOptionalBias(std::vector<double>& x, const std::string& name) const {
    if (!f_.FindTensor(name)) return;
    const auto b = Vec(name);
    for (size_t i = 0; i < x.size(); ++i) x[i] += b[i];
  }
  void Rope(std::vector<double>& x, int64_t pos) const {
    for (size_t h = 0; h < x.size() / head_dim_; ++h) {
      double* v = x.data() + h * head_dim_;
      for (int64_t i = 0; i < n_rot_ / 2; ++i) {
        double theta = pos * freq_scale_ * std::pow(base_, -2.0 * i / n_rot_);
        if (!freq_factors_.empty()) theta /= freq_factors_[i];
        const int64_t a = neox_ ? i : 2 * i, b = neox_ ? i + n_rot_ / 2 : 2 * i + 1;
        const double x0 = v[a], x1 = v[b];
        v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
        v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
      }
    }
  }

  const GgufFile& f_;
  std::string arch_;
  int64_t n_embd_ = 0, n_layer_ = 0, n_head_ = 0, n_head_kv_ = 0, head_dim_ = 0, head_dim_v_ = 0;
  int64_t n_rot_ = 0, n_vocab_ = 0;
  int64_t n_layer_forward_ = 0;  // block_count less the NextN blocks
  double eps_ = 1e-5, base_ = 10000.0, freq_scale_ = 1.0, yarn_factor_ = 1.0, mla_kq_scale_ = 1.0;
  bool neox_ = false;
  ref::Rope rope_;
  ref::RoutingConfig routing_;
  ref::MlaWeights mla_;  // sizes only
  std::vector<double> freq_factors_, embd_, out_, out_norm_;
};

}  // namespace pagoda::testing
