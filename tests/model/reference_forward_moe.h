// The mixture-of-experts and multi-head latent attention parts of the float64
// reference forward (reference_forward.h), as plain loops over doubles,
// written from the model definitions (HF transformers Qwen2-MoE / Qwen3-MoE /
// Mixtral, DeepSeek-V3 inference/model.py, GLM-4.5) and cross-checked with
// llama.cpp (llama-graph.cpp build_moe_ffn, models/deepseek2.cpp, ggml's
// rope_yarn). Independent of src/model. Header-only, like its parent.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace pagoda::testing::ref {

// y = W x for W [n_out rows][x.size() cols], starting at row `row0` of w.
inline std::vector<double> MatVec(const std::vector<double>& w, const std::vector<double>& x, int64_t n_out,
                                  int64_t row0 = 0) {
  const int64_t n_in = static_cast<int64_t>(x.size());
  std::vector<double> y(n_out, 0.0);
  for (int64_t r = 0; r < n_out; ++r) {
    const double* wr = w.data() + (row0 + r) * n_in;
    double acc = 0.0;
    for (int64_t i = 0; i < n_in; ++i) acc += wr[i] * x[i];
    y[r] = acc;
  }
  return y;
}

inline std::vector<double> RmsNorm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
  return y;
}

inline double Silu(double v) { return v / (1.0 + std::exp(-v)); }
inline double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// down(silu(gate x) * up x) with gate / up rows [row0, row0 + n_ff) of their
// matrices and down rows [down_row0, down_row0 + n_embd).
inline std::vector<double> SwiGlu(const std::vector<double>& x, const std::vector<double>& gate, int64_t gate_row0,
                                  const std::vector<double>& up, int64_t up_row0, const std::vector<double>& down,
                                  int64_t down_row0, int64_t n_ff) {
  auto g = MatVec(gate, x, n_ff, gate_row0);
  const auto u = MatVec(up, x, n_ff, up_row0);
  for (int64_t i = 0; i < n_ff; ++i) g[i] = Silu(g[i]) * u[i];
  return MatVec(down, g, static_cast<int64_t>(x.size()), down_row0);
}

// ---- Routing ----------------------------------------------------------------

struct RoutingConfig {
  int64_t n_expert = 0;
  int64_t n_used = 0;
  bool sigmoid = false;   // expert_gating_func 2; else softmax
  bool norm = false;      // renormalise the selected weights to sum 1
  double scale = 0.0;     // multiply the weights when not 0 / 1
  int64_t n_groups = 0;   // group-limited selection when > 1
  int64_t n_group_used = 0;
};

// How close routing came to a tie: the smallest gap, over every token and
// MoE layer, between the last chosen and the first rejected selection score
// (and, with groups, between the last kept and first dropped group score).
// A test asserts it is large enough that rounding cannot flip a choice.
struct RoutingStats {
  double min_gap = std::numeric_limits<double>::infinity();
  int64_t decisions = 0;
  void Add(double gap) {
    min_gap = std::min(min_gap, gap);
    ++decisions;
  }
};

struct Route {
  std::vector<int64_t> experts;  // chosen, best first
  std::vector<double> weights;   // their mixing weights
};

// Indices of the k largest of v (descending; ties to the lower index); gap
// receives v[k-1th] - v[kth] (infinity when k == v.size()).
inline std::vector<int64_t> TopK(const std::vector<double>& v, int64_t k, double* gap) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  *gap = k < static_cast<int64_t>(v.size()) ? v[order[k - 1]] - v[order[k]] : std::numeric_limits<double>::infinity();
  order.resize(k);
  return order;
}

// p = softmax | sigmoid(logits); sel = p + bias (choice only); with groups
// the top n_group_used groups by the sum of their top-2 sel survive; the
// top n_used of sel are chosen and weighted by p (unbiased), renormalised
// and scaled as configured.
inline Route RouteToken(const std::vector<double>& logits, const std::vector<double>* bias, const RoutingConfig& c,
                        RoutingStats* stats) {
  const int64_t n = c.n_expert;
  std::vector<double> p(n);
  if (c.sigmoid) {
    for (int64_t e = 0; e < n; ++e) p[e] = Sigmoid(logits[e]);
  } else {
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (int64_t e = 0; e < n; ++e) sum += (p[e] = std::exp(logits[e] - mx));
    for (double& v : p) v /= sum;
  }
  std::vector<double> sel = p;
  if (bias) {
    for (int64_t e = 0; e < n; ++e) sel[e] += (*bias)[e];
  }
  double gap = 0.0;
  if (c.n_groups > 1) {
    const int64_t per = n / c.n_groups;
    std::vector<double> group_score(c.n_groups);
    for (int64_t g = 0; g < c.n_groups; ++g) {
      std::vector<double> in(sel.begin() + g * per, sel.begin() + (g + 1) * per);
      double unused = 0.0;
      const auto top2 = TopK(in, 2, &unused);
      group_score[g] = in[top2[0]] + in[top2[1]];
    }
    const auto kept = TopK(group_score, c.n_group_used, &gap);
    if (stats && c.n_group_used < c.n_groups) stats->Add(gap);
    std::vector<bool> keep(c.n_groups, false);
    for (int64_t g : kept) keep[g] = true;
    for (int64_t e = 0; e < n; ++e) {
      if (!keep[e / per]) sel[e] = -std::numeric_limits<double>::infinity();
    }
  }
  Route r;
  r.experts = TopK(sel, c.n_used, &gap);
  if (stats && c.n_used < n) {
    // With groups the first rejected may be a masked expert (-inf): the gap
    // to the best surviving rejected one is what matters, and TopK gives it
    // unless all survivors were chosen (then nothing can flip).
    if (std::isfinite(gap)) stats->Add(gap);
  }
  double sum = 0.0;
  for (int64_t e : r.experts) {
    r.weights.push_back(p[e]);
    sum += p[e];
  }
  for (double& w : r.weights) {
    if (c.norm) w /= sum;
    if (c.scale != 0.0 && c.scale != 1.0) w *= c.scale;
  }
  return r;
}

// The routed experts of one token. gate / up hold n_expert * n_ff rows of
// n_embd (or, merged, gate_up holds 2 n_ff rows per expert: gate, then up, and
// `up` is the same matrix); down holds n_expert * n_embd rows of n_ff.
struct ExpertWeights {
  const std::vector<double>* gate = nullptr;
  const std::vector<double>* up = nullptr;
  const std::vector<double>* down = nullptr;
  bool merged = false;
  int64_t n_ff = 0;
};

inline std::vector<double> RoutedExperts(const std::vector<double>& x, const Route& r, const ExpertWeights& w) {
  const int64_t n_embd = static_cast<int64_t>(x.size()), f = w.n_ff;
  std::vector<double> out(n_embd, 0.0);
  for (size_t i = 0; i < r.experts.size(); ++i) {
    const int64_t e = r.experts[i];
    const int64_t gate_row0 = w.merged ? e * 2 * f : e * f;
    const int64_t up_row0 = w.merged ? e * 2 * f + f : e * f;
    const auto y = SwiGlu(x, *w.gate, gate_row0, *w.up, up_row0, *w.down, e * n_embd, f);
    for (int64_t j = 0; j < n_embd; ++j) out[j] += r.weights[i] * y[j];
  }
  return out;
}

// ---- RoPE -------------------------------------------------------------------

// Rotary angles of ggml's rope with YaRN (rope_yarn): theta_extrap =
// pos * base^(-2i/n_dims), theta_interp = theta_extrap / factor, mixed by the
// ramp between the beta_fast / beta_slow correction dimensions. Magnitudes
// are left at 1: for deepseek2 llama.cpp cancels the rope's mscale and puts
// the correction into the attention scale (YarnKqScale).
struct Rope {
  int64_t n_dims = 0;
  double base = 10000.0;
  double freq_scale = 1.0;   // linear scaling (1 / factor) without YaRN
  bool yarn = false;
  double factor = 1.0;
  double corr_low = 0.0, corr_high = 0.0;
  std::vector<double> freq_factors;  // rope_freqs.weight divisors

  void SetYarn(double yarn_factor, double n_ctx_orig, double beta_fast, double beta_slow) {
    yarn = true;
    factor = yarn_factor;
    auto corr_dim = [&](double n_rot) {
      return n_dims * std::log(n_ctx_orig / (n_rot * 2 * M_PI)) / (2 * std::log(base));
    };
    corr_low = std::max(0.0, std::floor(corr_dim(beta_fast)));
    corr_high = std::min(double(n_dims - 1), std::ceil(corr_dim(beta_slow)));
  }

  double Theta(int64_t pos, int64_t i) const {
    double extrap = pos * std::pow(base, -2.0 * i / n_dims);
    if (!freq_factors.empty()) extrap /= freq_factors[i];
    if (!yarn) return extrap * freq_scale;
    const double y = (i - corr_low) / std::max(0.001, corr_high - corr_low);
    const double ramp = 1.0 - std::min(1.0, std::max(0.0, y));
    return extrap / factor * (1.0 - ramp) + extrap * ramp;
  }

  // Rotates v[0, n_dims): adjacent pairs (normal) or pairs (i, i + n_dims/2) (NeoX).
  void Apply(double* v, int64_t pos, bool neox) const {
    for (int64_t i = 0; i < n_dims / 2; ++i) {
      const double theta = Theta(pos, i);
      const int64_t a = neox ? i : 2 * i, b = neox ? i + n_dims / 2 : 2 * i + 1;
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
      v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
  }
};

// ---- MLA --------------------------------------------------------------------

// One deepseek2 layer's attention weights, dequantized. W_UK / W_UV come from
// attn_kv_b (early layout) or attn_k_b / attn_v_b (current layout).
struct MlaWeights {
  int64_t n_head = 0, q_lora = 0, kv_lora = 0, rope = 0, nope = 0, v = 0;
  std::vector<double> q_a, q_a_norm, q_b, q;  // q_lora > 0: q_a, q_b; else q
  std::vector<double> kv_a, kv_a_norm, wo;
  // Decompression per head: uk[h] is [nope rows][kv_lora], uv[h] [v rows][kv_lora].
  std::vector<std::vector<double>> uk, uv;
};

// Decompressed ("naive") MLA over a whole sequence of normed inputs xn: per
// head q = [q_nope | q_pe]; [c_kv | k_pe] = kv_a xn; c_kv = rmsnorm(c_kv);
// k = [W_UK c_kv | rope(k_pe)] (k_pe shared by the heads), v = W_UV c_kv;
// causal softmax(q.k * kq_scale) v; then attn_output. Returns [n][n_embd].
inline std::vector<std::vector<double>> MlaAttention(const std::vector<std::vector<double>>& xn,
                                                     const MlaWeights& w, const Rope& rope, double eps,
                                                     double kq_scale) {
  const int64_t n = static_cast<int64_t>(xn.size()), H = w.n_head, qk = w.nope + w.rope;
  std::vector<std::vector<double>> q(n), k(n), v(n);
  for (int64_t t = 0; t < n; ++t) {
    q[t] = w.q_lora > 0 ? MatVec(w.q_b, RmsNorm(MatVec(w.q_a, xn[t], w.q_lora), w.q_a_norm, eps), H * qk)
                        : MatVec(w.q, xn[t], H * qk);
    const auto kv_a = MatVec(w.kv_a, xn[t], w.kv_lora + w.rope);
    const auto c_kv = RmsNorm(std::vector<double>(kv_a.begin(), kv_a.begin() + w.kv_lora), w.kv_a_norm, eps);
    std::vector<double> k_pe(kv_a.begin() + w.kv_lora, kv_a.end());
    rope.Apply(k_pe.data(), t, false);
    k[t].resize(H * qk);
    v[t].resize(H * w.v);
    for (int64_t h = 0; h < H; ++h) {
      const auto k_nope = MatVec(w.uk[h], c_kv, w.nope);
      const auto vh = MatVec(w.uv[h], c_kv, w.v);
      std::copy(k_nope.begin(), k_nope.end(), k[t].begin() + h * qk);
      std::copy(k_pe.begin(), k_pe.end(), k[t].begin() + h * qk + w.nope);
      std::copy(vh.begin(), vh.end(), v[t].begin() + h * w.v);
      rope.Apply(q[t].data() + h * qk + w.nope, t, false);
    }
  }
  const int64_t n_embd = static_cast<int64_t>(xn[0].size());
  std::vector<std::vector<double>> out(n);
  for (int64_t t = 0; t < n; ++t) {
    std::vector<double> attn(H * w.v, 0.0);
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> s(t + 1);
      double mx = -1e300;
      for (int64_t j = 0; j <= t; ++j) {
        double d = 0.0;
        for (int64_t i = 0; i < qk; ++i) d += q[t][h * qk + i] * k[j][h * qk + i];
        s[j] = d * kq_scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0.0;
      for (double& e : s) sum += (e = std::exp(e - mx));
      for (int64_t j = 0; j <= t; ++j) {
        for (int64_t i = 0; i < w.v; ++i) attn[h * w.v + i] += s[j] / sum * v[j][h * w.v + i];
      }
    }
    out[t] = MatVec(w.wo, attn, n_embd);
  }
  return out;
}

// llama.cpp's deepseek2 attention scale: mscale^2 / sqrt(nope + rope) with
// mscale = 1 + yarn_log_multiplier * ln(factor) (the GGUF value, i.e. 0.1 *
// mscale_all_dim, as DeepSeek's softmax_scale; 1 without YaRN).
inline double YarnKqScale(int64_t qk_head_dim, double factor, double yarn_log_multiplier) {
  const double mscale = factor > 1.0 ? 1.0 + yarn_log_multiplier * std::log(factor) : 1.0;
  return mscale * mscale / std::sqrt(static_cast<double>(qk_head_dim));
}

}  // namespace pagoda::testing::ref
