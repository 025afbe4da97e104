#include "model/layers/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/matmul.h"

namespace pagoda {
namespace {

// Index of the largest of v[0, n) not yet taken; ties go to the lower index.
int32_t ArgMaxFree(const float* v, const uint8_t* taken, int64_t n) {
  int32_t best = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (taken[i]) continue;
    if (best < 0 || v[i] > v[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

}  // namespace

void RouteToken(const MoeConfig& c, const float* logits, const float* bias, int32_t* ids,
                float* weights, float* scratch) {
  const int64_t n = c.n_expert;
  float* p = scratch;        // [n] routing probabilities
  float* sel = scratch + n;  // [n] choice scores
  if (c.gating == MoeConfig::Gating::kSoftmax) {
    float mx = logits[0];
    for (int64_t i = 1; i < n; ++i) mx = std::max(mx, logits[i]);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += (p[i] = std::exp(logits[i] - mx));
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) p[i] *= inv;
  } else {
    for (int64_t i = 0; i < n; ++i) p[i] = 1.0f / (1.0f + std::exp(-logits[i]));
  }
  for (int64_t i = 0; i < n; ++i) sel[i] = bias != nullptr ? p[i] + bias[i] : p[i];

  uint8_t taken[512];  // n_expert <= 512 (checked when the config is read)
  if (c.n_group > 1) {
    // Group-limited routing: a group scores the sum of its two best choice
    // scores (its best alone if it has one expert); experts outside the best
    // n_group_used groups cannot be chosen.
    const int64_t per = n / c.n_group;
    float group_score[512];
    for (int64_t g = 0; g < c.n_group; ++g) {
      float a = -std::numeric_limits<float>::infinity(), b = a;
      for (int64_t i = g * per; i < (g + 1) * per; ++i) {
        if (sel[i] > a) {
          b = a;
          a = sel[i];
        } else if (sel[i] > b) {
          b = sel[i];
        }
      }
      group_score[g] = per > 1 ? a + b : a;
    }
    std::memset(taken, 0, c.n_group);
    for (int64_t k = 0; k < c.n_group_used; ++k) taken[ArgMaxFree(group_score, taken, c.n_group)] = 1;
    for (int64_t g = 0; g < c.n_group; ++g) {
      if (taken[g]) continue;
      for (int64_t i = g * per; i < (g + 1) * per; ++i) sel[i] = -std::numeric_limits<float>::infinity();
    }
  }
  std::memset(taken, 0, n);
  double sum = 0.0;
  for (int64_t k = 0; k < c.n_expert_used; ++k) {
    const int32_t e = ArgMaxFree(sel, taken, n);
    taken[e] = 1;
    ids[k] = e;
    weights[k] = p[e];  // the unbiased probability
    sum += p[e];
  }
  if (c.norm_w) {
    const float inv = static_cast<float>(1.0 / std::max(sum, 6.103515625e-5));
    for (int64_t k = 0; k < c.n_expert_used; ++k) weights[k] *= inv;
  }
  if (c.w_scale != 1.0f) {
    for (int64_t k = 0; k < c.n_expert_used; ++k) weights[k] *= c.w_scale;
  }
}

Result<std::unique_ptr<MoeFfn>> MoeFfn::Load(const WeightLoader& w, int layer, const ModelConfig& c,
                                             const MoeFfnOptions& opt) {
  auto f = std::unique_ptr<MoeFfn>(new MoeFfn());
  f->cfg_ = c.moe;
  f->n_embd_ = c.n_embd;
  const MoeConfig& m = c.moe;
  auto name = [layer](const char* s) { return WeightLoader::LayerName(layer, s); };
  PAGODA_ASSIGN_OR_RETURN(f->router_, w.Matrix(name("ffn_gate_inp.weight"), c.n_embd, m.n_expert));
  PAGODA_ASSIGN_OR_RETURN(f->bias_, w.OptionalVector(name("exp_probs_b.bias"), m.n_expert));
  if (w.Has(name("ffn_gate_up_exps.weight"))) {
    const std::string merged = name("ffn_gate_up_exps.weight");
    PAGODA_ASSIGN_OR_RETURN(f->gate_, w.Stacked(merged, c.n_embd, m.n_ff_exp, m.n_expert, 2 * m.n_ff_exp, 0));
    PAGODA_ASSIGN_OR_RETURN(f->up_, w.Stacked(merged, c.n_embd, m.n_ff_exp, m.n_expert, 2 * m.n_ff_exp,
                                              m.n_ff_exp));
  } else {
    PAGODA_ASSIGN_OR_RETURN(f->gate_, w.Stacked(name("ffn_gate_exps.weight"), c.n_embd, m.n_ff_exp, m.n_expert));
    PAGODA_ASSIGN_OR_RETURN(f->up_, w.Stacked(name("ffn_up_exps.weight"), c.n_embd, m.n_ff_exp, m.n_expert));
  }
  PAGODA_ASSIGN_OR_RETURN(f->down_, w.Stacked(name("ffn_down_exps.weight"), m.n_ff_exp, c.n_embd, m.n_expert));
  if (opt.shared != MoeFfnOptions::Shared::kNone) {
    if (m.n_ff_shexp <= 0) {
      return InvalidArgument(w.file().path() + ": layer " + std::to_string(layer) +
                             " needs a shared expert but the file gives it no width "
                             "(expert_shared_count / expert_shared_feed_forward_length)");
    }
    PAGODA_ASSIGN_OR_RETURN(f->shared_, DenseFfn::Load(w, layer, c.n_embd, m.n_ff_shexp, "_shexp"));
    if (opt.shared == MoeFfnOptions::Shared::kSigmoidGated) {
      PAGODA_ASSIGN_OR_RETURN(f->shared_gate_, w.Vector(name("ffn_gate_inp_shexp.weight"), c.n_embd));
    }
  }
  return f;
}

int64_t MoeFfn::ScratchFloats(int64_t n) const {
  const int64_t k = cfg_.n_expert_used;
  int64_t s = Round16(n * cfg_.n_expert) + Round16(2 * cfg_.n_expert) + 2 * Round16(n * k) +
              Round16(2 * cfg_.n_expert + 1) + Round16(n * k) + 2 * Round16(n * k * n_embd_) +
              2 * Round16(n * k * cfg_.n_ff_exp);
  if (shared_) s += Round16(n * n_embd_) + shared_->ScratchFloats(n);
  return s;
}

void MoeFfn::Forward(const ForwardContext& ctx, const float* x, float* out) const {
  const int64_t n = ctx.n_tokens, k = cfg_.n_expert_used, n_exp = cfg_.n_expert, E = n_embd_;
  const int64_t F = cfg_.n_ff_exp, nk = n * k;
  float* logits = ctx.scratch;                                        // [n, n_expert]
  float* route_scratch = logits + Round16(n * n_exp);                 // [2 * n_expert]
  auto* ids = reinterpret_cast<int32_t*>(route_scratch + Round16(2 * n_exp));  // [n, k]
  float* wts = reinterpret_cast<float*>(ids) + Round16(nk);          // [n, k]
  auto* start = reinterpret_cast<int32_t*>(wts + Round16(nk));        // [2 * n_expert + 1]
  auto* pairs = start + Round16(2 * n_exp + 1);                       // [n * k] token * k + slot, by expert
  float* xg = reinterpret_cast<float*>(pairs) + Round16(nk);         // [n * k, n_embd] rows by expert
  float* ye = xg + Round16(nk * E);                                   // [n * k, n_embd]
  float* gate = ye + Round16(nk * E);                                 // [n * k, n_ff_exp]
  float* up = gate + Round16(nk * F);                                 // [n * k, n_ff_exp]

  kernels::MatMul(router_, x, n, logits, *ctx.pool);
  for (int64_t t = 0; t < n; ++t) {
    RouteToken(cfg_, logits + t * n_exp, bias_, ids + t * k, wts + t * k, route_scratch);
  }
  // Phase of each token from the runs (decode tokens may use decode copies).
  thread_local std::vector<uint8_t> phase_of;
  thread_local std::vector<int32_t> fill;
  phase_of.assign(n, 0);
  for (const PhaseRun& r : ctx.runs) {
    std::fill(phase_of.begin() + r.begin, phase_of.begin() + r.begin + r.n, static_cast<uint8_t>(r.phase));
  }
  // Counting sort of the (token, slot) pairs by (expert, phase): group
  // g = 2 * expert + phase holds pairs [start[g], start[g + 1]).
  std::fill(start, start + 2 * n_exp + 1, 0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < k; ++j) ++start[ids[t * k + j] * 2 + phase_of[t] + 1];
  }
  for (int64_t b = 0; b < 2 * n_exp; ++b) start[b + 1] += start[b];
  fill.assign(start, start + 2 * n_exp);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < k; ++j) pairs[fill[ids[t * k + j] * 2 + phase_of[t]]++] = static_cast<int32_t>(t * k + j);
  }
  for (int64_t p = 0; p < nk; ++p) std::memcpy(xg + p * E, x + (pairs[p] / k) * E, E * sizeof(float));

  // Every selected expert's gate and up in one pool run, then every down.
  thread_local std::vector<kernels::MatMulGroupTarget> gu, down;
  gu.clear();
  down.clear();
  int64_t bytes_read = 0;
  for (int64_t g = 0; g < 2 * n_exp; ++g) {
    const int32_t b = start[g], m = start[g + 1] - b;
    if (m == 0) continue;
    const int64_t e = g / 2;
    const Phase phase = static_cast<Phase>(g % 2);
    gu.push_back({&gate_[e][phase], xg + b * E, m, gate + b * F});
    gu.push_back({&up_[e][phase], xg + b * E, m, up + b * F});
    down.push_back({&down_[e][phase], gate + b * F, m, ye + b * E});
    bytes_read += gate_[e][phase].nbytes + up_[e][phase].nbytes + down_[e][phase].nbytes;
  }
  kernels::MatMulGrouped(gu, *ctx.pool);
  kernels::SiluMul(gate, up, nk * F, gate);
  kernels::MatMulGrouped(down, *ctx.pool);
  if (ctx.stats != nullptr) ctx.stats->expert_bytes += bytes_read;

  // Each token's experts are summed in increasing expert order (the order of
  // the groups), whatever else the batch holds.
  std::fill(out, out + n * E, 0.0f);
  for (int64_t p = 0; p < nk; ++p) {
    const int32_t pair = pairs[p];
    const float wt = wts[pair];
    float* o = out + (pair / k) * E;
    const float* y = ye + p * E;
    for (int64_t d = 0; d < E; ++d) o[d] += wt * y[d];
  }

  if (shared_) {
    float* sh = up + Round16(nk * F);  // [n, n_embd]
    ForwardContext sub = ctx;
    sub.scratch = sh + Round16(n * E);
    shared_->Forward(sub, x, sh);
    for (int64_t t = 0; t < n; ++t) {
      float g = 1.0f;
      if (shared_gate_ != nullptr) {
        double dot = 0.0;
        for (int64_t d = 0; d < E; ++d) dot += static_cast<double>(shared_gate_[d]) * x[t * E + d];
        g = static_cast<float>(1.0 / (1.0 + std::exp(-dot)));
      }
      float* o = out + t * E;
      const float* s = sh + t * E;
      for (int64_t d = 0; d < E; ++d) o[d] += g * s[d];
    }
  }
}

}  // namespace pagoda
