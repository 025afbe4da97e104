// A float64 scalar forward pass of the dense decoder architectures (llama,
// qwen2, qwen3), written independently of src/model: it reads the GGUF
// metadata itself, dequantizes every weight with DequantizeRow and runs plain
// loops with double accumulation over the whole token sequence (no KV cache).
// It is the yardstick for the engine in model_reference_test.cc. Header-only
// because the test build compiles only *_test.cc files of this folder.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/cpu/quantize.h"

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
    if (m.GetStringOr(key("rope.scaling.type"), "none").value() == "linear") {
      freq_scale_ = 1.0 / m.GetFloatOr(key("rope.scaling.factor"), 1.0).value();
    }
    neox_ = arch_ == "qwen2" || arch_ == "qwen3";
    if (f.FindTensor("rope_freqs.weight")) freq_factors_ = Vec("rope_freqs.weight");
    embd_ = Mat("token_embd.weight");
    n_vocab_ = static_cast<int64_t>(embd_.size()) / n_embd_;
    out_ = f.FindTensor("output.weight") ? Mat("output.weight") : embd_;
    out_norm_ = Vec("output_norm.weight");
  }

  int64_t n_vocab() const { return n_vocab_; }

  // Logits of every position of `tokens` (one sequence from position 0):
  // [tokens.size()][n_vocab].
  std::vector<std::vector<double>> Forward(const std::vector<int32_t>& tokens) const {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t E = n_embd_;
    std::vector<std::vector<double>> x(n);
    for (int64_t t = 0; t < n; ++t) {
      x[t].assign(embd_.begin() + tokens[t] * E, embd_.begin() + (tokens[t] + 1) * E);
    }
    for (int64_t l = 0; l < n_layer_; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const auto wq = Mat(p + "attn_q.weight"), wk = Mat(p + "attn_k.weight");
      const auto wv = Mat(p + "attn_v.weight"), wo = Mat(p + "attn_output.weight");
      const auto attn_norm = Vec(p + "attn_norm.weight"), ffn_norm = Vec(p + "ffn_norm.weight");
      const auto wg = Mat(p + "ffn_gate.weight"), wu = Mat(p + "ffn_up.weight");
      const auto wd = Mat(p + "ffn_down.weight");
      const int64_t qw = n_head_ * head_dim_, kw = n_head_kv_ * head_dim_, vw = n_head_kv_ * head_dim_v_;
      std::vector<std::vector<double>> q(n), k(n), v(n);
      for (int64_t t = 0; t < n; ++t) {
        const auto xn = Norm(x[t], attn_norm);
        q[t] = MatVec(wq, xn, qw);
        k[t] = MatVec(wk, xn, kw);
        v[t] = MatVec(wv, xn, vw);
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
        auto o = MatVec(wo, attn, E);
        AddOptionalBias(o, p + "attn_output.bias");
        for (int64_t i = 0; i < E; ++i) x[t][i] += o[i];
        const auto xn = Norm(x[t], ffn_norm);
        const int64_t n_ff = static_cast<int64_t>(wg.size()) / E;
        auto gate = MatVec(wg, xn, n_ff);
        const auto up = MatVec(wu, xn, n_ff);
        for (int64_t i = 0; i < n_ff; ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
        const auto down = MatVec(wd, gate, E);
        for (int64_t i = 0; i < E; ++i) x[t][i] += down[i];
      }
    }
    std::vector<std::vector<double>> logits(n);
    for (int64_t t = 0; t < n; ++t) logits[t] = MatVec(out_, Norm(x[t], out_norm_), n_vocab_);
    return logits;
  }

 private:
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
  double eps_ = 1e-5, base_ = 10000.0, freq_scale_ = 1.0;
  bool neox_ = false;
  std::vector<double> freq_factors_, embd_, out_, out_norm_;
};

}  // namespace pagoda::testing
