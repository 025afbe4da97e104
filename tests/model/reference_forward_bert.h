// A float64 scalar forward pass of the bert encoder, written independently of
// src/model: it reads the GGUF metadata and tensors itself (dequantized with
// DequantizeRow), and runs one sequence at a time with plain double loops:
//   x = LN(token_embd[t] + token_types[0] + position_embd[p])
//   x = LN(x + O(softmax(Q K^T / sqrt(d)) V));  x = LN(x + down(gelu_tanh(up x)))
// Pooling (mean, cls) and the classifier head (tanh(cls x + b), cls.output)
// follow llama.cpp's build_pooling. The yardstick of encoder_model_test.cc.
// Header-only because the test build compiles only *_test.cc files.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "base/check.h"
#include "gguf/gguf_file.h"
#include "kernels/cpu/quantize.h"

namespace pagoda::testing {

class BertReference {
 public:
  // A dequantized matrix: rows of `cols` doubles (GGML ne = [cols, rows]).
  struct Dense {
    std::vector<double> v;
    int64_t rows = 0;
    int64_t cols = 0;
    const double* row(int64_t r) const { return v.data() + r * cols; }
  };

  // Aborts on a malformed file: used only on files the test wrote.
  explicit BertReference(const GgufFile& f) : f_(f) {
    const GgufMetadata& m = f.metadata();
    n_embd_ = m.GetInt("bert.embedding_length").value();
    n_head_ = m.GetInt("bert.attention.head_count").value();
    n_layer_ = m.GetInt("bert.block_count").value();
    eps_ = m.GetFloatOr("bert.attention.layer_norm_epsilon", 1e-12).value();
    tok_ = Load("token_embd.weight");
    pos_ = Load("position_embd.weight");
    if (f.FindTensor("token_types.weight") != nullptr) types_ = Load("token_types.weight");
    if (f.FindTensor("cls.weight") != nullptr) {
      cls_ = Load("cls.weight");
      cls_b_ = Load("cls.bias");
      if (f.FindTensor("cls.output.weight") != nullptr) {
        cls_out_ = Load("cls.output.weight");
        cls_out_b_ = Load("cls.output.bias");
      }
    }
  }

  // The last layer's output for one whole sequence: [tokens.size()][n_embd].
  std::vector<std::vector<double>> Forward(const std::vector<int32_t>& tokens) const {
    const size_t n = tokens.size();
    std::vector<std::vector<double>> x(n, std::vector<double>(n_embd_));
    for (size_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < n_embd_; ++d) {
        x[i][d] = tok_.row(tokens[i])[d] + pos_.row(static_cast<int64_t>(i))[d] +
                  (types_.rows > 0 ? types_.row(0)[d] : 0.0);
      }
    }
    LayerNormAll(x, "token_embd_norm");
    for (int l = 0; l < n_layer_; ++l) Block(l, x);
    return x;
  }

  static std::vector<double> MeanPool(const std::vector<std::vector<double>>& h) {
    std::vector<double> out(h[0].size(), 0.0);
    for (const auto& row : h) {
      for (size_t d = 0; d < row.size(); ++d) out[d] += row[d];
    }
    for (double& v : out) v /= static_cast<double>(h.size());
    return out;
  }

  bool has_classifier() const { return cls_.rows > 0; }
  std::vector<double> Classify(const std::vector<double>& pooled) const {
    std::vector<double> h = Affine(cls_, cls_b_, pooled);
    for (double& v : h) v = std::tanh(v);
    return cls_out_.rows > 0 ? Affine(cls_out_, cls_out_b_, h) : h;
  }

 private:
  Dense Load(const std::string& name) const {
    const TensorView t = f_.GetTensor(name).value();
    Dense d;
    d.cols = t.ne[0];
    d.rows = t.elements() / t.ne[0];
    std::vector<float> buf(d.cols);
    for (int64_t r = 0; r < d.rows; ++r) {
      PAGODA_CHECK(kernels::DequantizeRow(t.type, t.row(r), buf.data(), d.cols).ok());
      d.v.insert(d.v.end(), buf.begin(), buf.end());
    }
    return d;
  }
  Dense Layer(int l, const char* suffix) const { return Load("blk." + std::to_string(l) + "." + suffix); }

  // W x + b for W [rows][cols].
  static std::vector<double> Affine(const Dense& w, const Dense& b, const std::vector<double>& x) {
    std::vector<double> y(w.rows);
    for (int64_t r = 0; r < w.rows; ++r) {
      double acc = b.v[r];
      for (int64_t c = 0; c < w.cols; ++c) acc += w.row(r)[c] * x[c];
      y[r] = acc;
    }
    return y;
  }

  void LayerNormAll(std::vector<std::vector<double>>& x, const std::string& prefix) const {
    const Dense w = Load(prefix + ".weight"), b = Load(prefix + ".bias");
    for (auto& row : x) {
      double mean = 0.0, var = 0.0;
      for (double v : row) mean += v;
      mean /= static_cast<double>(row.size());
      for (double v : row) var += (v - mean) * (v - mean);
      var /= static_cast<double>(row.size());
      for (size_t d = 0; d < row.size(); ++d) row[d] = (row[d] - mean) / std::sqrt(var + eps_) * w.v[d] + b.v[d];
    }
  }

  void Block(int l, std::vector<std::vector<double>>& x) const {
    const size_t n = x.size();
    const std::string p = "blk." + std::to_string(l) + ".";
    const Dense wq = Layer(l, "attn_q.weight"), bq = Layer(l, "attn_q.bias");
    const Dense wk = Layer(l, "attn_k.weight"), bk = Layer(l, "attn_k.bias");
    const Dense wv = Layer(l, "attn_v.weight"), bv = Layer(l, "attn_v.bias");
    const Dense wo = Layer(l, "attn_output.weight"), bo = Layer(l, "attn_output.bias");
    std::vector<std::vector<double>> q(n), k(n), v(n);
    for (size_t i = 0; i < n; ++i) {
      q[i] = Affine(wq, bq, x[i]);
      k[i] = Affine(wk, bk, x[i]);
      v[i] = Affine(wv, bv, x[i]);
    }
    const int64_t hd = n_embd_ / n_head_;
    std::vector<std::vector<double>> ctx(n, std::vector<double>(n_embd_, 0.0));
    for (int64_t h = 0; h < n_head_; ++h) {
      for (size_t i = 0; i < n; ++i) {
        std::vector<double> s(n);
        double mx = -1e300, sum = 0.0;
        for (size_t j = 0; j < n; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < hd; ++d) dot += q[i][h * hd + d] * k[j][h * hd + d];
          s[j] = dot / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[j]);
        }
        for (size_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (size_t j = 0; j < n; ++j) {
          for (int64_t d = 0; d < hd; ++d) ctx[i][h * hd + d] += s[j] / sum * v[j][h * hd + d];
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const std::vector<double> o = Affine(wo, bo, ctx[i]);
      for (int64_t d = 0; d < n_embd_; ++d) x[i][d] += o[d];
    }
    LayerNormAll(x, p + "attn_output_norm");
    const Dense up = Layer(l, "ffn_up.weight"), b_up = Layer(l, "ffn_up.bias");
    const Dense down = Layer(l, "ffn_down.weight"), b_down = Layer(l, "ffn_down.bias");
    const double c = std::sqrt(2.0 / M_PI);
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> f = Affine(up, b_up, x[i]);
      // gelu_tanh(u) = 0.5 u (1 + tanh(a)) = u / (1 + e^(-2a)), a = c (u + 0.044715 u^3).
      for (double& u : f) u = u / (1.0 + std::exp(-2.0 * c * (u + 0.044715 * u * u * u)));
      const std::vector<double> y = Affine(down, b_down, f);
      for (int64_t d = 0; d < n_embd_; ++d) x[i][d] += y[d];
    }
    LayerNormAll(x, p + "layer_output_norm");
  }

  const GgufFile& f_;
  int64_t n_embd_ = 0, n_head_ = 0;
  int n_layer_ = 0;
  double eps_ = 1e-12;
  Dense tok_, pos_, types_, cls_, cls_b_, cls_out_, cls_out_b_;
};

}  // namespace pagoda::testing
