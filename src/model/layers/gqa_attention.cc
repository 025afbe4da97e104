#include "model/layers/gqa_attention.h"

#include <cmath>

#include "kernels/cpu/matmul.h"

namespace pagoda {
namespace {

Result<const float*> LoadVector(const WeightLoader& w, const std::string& name, int64_t n,
                                Presence presence) {
  switch (presence) {
    case Presence::kAbsent: return static_cast<const float*>(nullptr);
    case Presence::kOptional: return w.OptionalVector(name, n);
    case Presence::kRequired: return w.Vector(name, n);
  }
  return static_cast<const float*>(nullptr);
}

void AddBias(float* x, const float* b, int64_t n_rows, int64_t n) {
  if (b == nullptr) return;
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = x + r * n;
    for (int64_t i = 0; i < n; ++i) row[i] += b[i];
  }
}

}  // namespace

Result<std::unique_ptr<GqaAttention>> GqaAttention::Load(const WeightLoader& w, int layer,
                                                         const ModelConfig& c,
                                                         const GqaAttentionOptions& opt) {
  auto a = std::unique_ptr<GqaAttention>(new GqaAttention());
  a->n_head_ = static_cast<int>(c.n_head);
  a->n_head_kv_ = static_cast<int>(c.n_head_kv);
  a->head_dim_k_ = static_cast<int>(c.head_dim_k);
  a->head_dim_v_ = static_cast<int>(c.head_dim_v);
  a->n_rot_ = static_cast<int>(c.n_rot);
  a->rope_neox_ = c.rope_neox;
  a->rms_eps_ = c.rms_eps;
  const double mscale = c.yarn.enabled ? c.yarn.attn_mscale : 1.0;
  a->scale_ = static_cast<float>(mscale * mscale / std::sqrt(static_cast<double>(a->head_dim_k_)));
  auto name = [layer](const char* s) { return WeightLoader::LayerName(layer, s); };
  PAGODA_ASSIGN_OR_RETURN(a->wq_, w.Linear(name("attn_q.weight"), c.n_embd, a->q_width()));
  PAGODA_ASSIGN_OR_RETURN(a->wk_, w.Linear(name("attn_k.weight"), c.n_embd, a->k_width()));
  PAGODA_ASSIGN_OR_RETURN(a->wv_, w.Linear(name("attn_v.weight"), c.n_embd, a->v_width()));
  PAGODA_ASSIGN_OR_RETURN(a->wo_, w.Linear(name("attn_output.weight"), a->o_width(), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(a->bq_, LoadVector(w, name("attn_q.bias"), a->q_width(), opt.qkv_bias));
  PAGODA_ASSIGN_OR_RETURN(a->bk_, LoadVector(w, name("attn_k.bias"), a->k_width(), opt.qkv_bias));
  PAGODA_ASSIGN_OR_RETURN(a->bv_, LoadVector(w, name("attn_v.bias"), a->v_width(), opt.qkv_bias));
  PAGODA_ASSIGN_OR_RETURN(a->bo_, LoadVector(w, name("attn_output.bias"), c.n_embd, opt.out_bias));
  PAGODA_ASSIGN_OR_RETURN(a->q_norm_, LoadVector(w, name("attn_q_norm.weight"), c.head_dim_k, opt.qk_norm));
  PAGODA_ASSIGN_OR_RETURN(a->k_norm_, LoadVector(w, name("attn_k_norm.weight"), c.head_dim_k, opt.qk_norm));
  if ((a->q_norm_ == nullptr) != (a->k_norm_ == nullptr)) {
    return InvalidArgument(w.file().path() + ": layer " + std::to_string(layer) +
                           " has only one of attn_q_norm / attn_k_norm");
  }
  return a;
}

KvLayerSpec GqaAttention::kv_spec() const {
  return KvLayerSpec{n_head_kv_, head_dim_k_, head_dim_v_};
}

int64_t GqaAttention::ScratchFloats(int64_t n_tokens) const {
  return Round16(n_tokens * q_width()) + Round16(n_tokens * k_width()) +
         Round16(n_tokens * v_width()) + Round16(n_tokens * o_width());
}

void GqaAttention::Forward(const ForwardContext& ctx, int layer, const float* x, float* out) const {
  const int64_t n = ctx.n_tokens;
  float* q = ctx.scratch;                       // [n, n_head * head_dim_k]
  float* k = q + Round16(n * q_width());        // [n, n_head_kv * head_dim_k]
  float* v = k + Round16(n * k_width());        // [n, n_head_kv * head_dim_v]
  float* attn = v + Round16(n * v_width());     // [n, n_head * head_dim_v]

  // Q, K and V share the input: one activation conversion, one pool run.
  const PhasedTarget qkv[] = {{&wq_, q}, {&wk_, k}, {&wv_, v}};
  PhasedMatMulShared(qkv, x, ctx.runs, *ctx.pool);
  AddBias(q, bq_, n, q_width());
  AddBias(k, bk_, n, k_width());
  AddBias(v, bv_, n, v_width());
  if (q_norm_ != nullptr) {
    kernels::RmsNorm(q, q_norm_, rms_eps_, n * n_head_, head_dim_k_, q);
    kernels::RmsNorm(k, k_norm_, rms_eps_, n * n_head_kv_, head_dim_k_, k);
  }
  kernels::Rope(q, n, q_width(), n_head_, head_dim_k_, n_rot_, rope_neox_, ctx.rope_cos, ctx.rope_sin);
  kernels::Rope(k, n, k_width(), n_head_kv_, head_dim_k_, n_rot_, rope_neox_, ctx.rope_cos, ctx.rope_sin);

  for (int64_t t = 0; t < n; ++t) {
    ctx.kv->WriteK(layer, ctx.seq_ids[t], ctx.positions[t], k + t * k_width());
    ctx.kv->WriteV(layer, ctx.seq_ids[t], ctx.positions[t], v + t * v_width());
  }
  // Every position, this step's included, is read back as stored: what a
  // position contributes never depends on which step computed it.
  for (int s = 0; s < ctx.n_seqs; ++s) {
    ctx.attn_seqs[s].kv = ctx.kv->View(layer, ctx.seqs[s].seq_id);
    ctx.attn_seqs[s].rows = ctx.seqs[s].rows;
    ctx.attn_seqs[s].n_rows = ctx.seqs[s].n_rows;
  }
  kernels::AttentionShape shape;
  shape.n_head = n_head_;
  shape.n_head_kv = n_head_kv_;
  shape.head_dim_k = head_dim_k_;
  shape.head_dim_v = head_dim_v_;
  shape.scale = scale_;
  kernels::Attention(shape, q, q_width(), ctx.positions, ctx.attn_seqs, ctx.n_seqs, attn, o_width(),
                     *ctx.pool);

  PhasedMatMul(wo_, attn, ctx.runs, out, *ctx.pool);
  AddBias(out, bo_, n, wo_.n_out());
}

}  // namespace pagoda
