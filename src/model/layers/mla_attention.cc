#include "model/layers/mla_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize.h"

namespace pagoda {
namespace {

}  // namespace

Result<std::unique_ptr<MlaAttention>> MlaAttention::Load(const WeightLoader& w, int layer,
                                                         const ModelConfig& c, MlaMode mode) {
  auto a = std::unique_ptr<MlaAttention>(new MlaAttention());
  a->mode_ = mode;
  const MlaConfig& m = c.mla;
  a->n_head_ = c.n_head;
  a->q_lora_ = m.q_lora_rank;
  a->kv_lora_ = m.kv_lora_rank;
  a->nope_ = m.head_dim_nope;
  a->rope_ = m.head_dim_rope;
  a->v_dim_ = m.head_dim_v;
  a->rms_eps_ = c.rms_eps;
  const double mscale = c.yarn.enabled ? c.yarn.attn_mscale : 1.0;
  a->scale_ = static_cast<float>(mscale * mscale / std::sqrt(static_cast<double>(a->qk_dim())));
  auto name = [layer](const char* s) { return WeightLoader::LayerName(layer, s); };
  if (a->q_lora_ > 0) {
    PAGODA_ASSIGN_OR_RETURN(a->wq_a_, w.Linear(name("attn_q_a.weight"), c.n_embd, a->q_lora_));
    PAGODA_ASSIGN_OR_RETURN(a->q_a_norm_, w.Vector(name("attn_q_a_norm.weight"), a->q_lora_));
    PAGODA_ASSIGN_OR_RETURN(a->wq_b_, w.Linear(name("attn_q_b.weight"), a->q_lora_, a->q_width()));
  } else {
    PAGODA_ASSIGN_OR_RETURN(a->wq_, w.Linear(name("attn_q.weight"), c.n_embd, a->q_width()));
  }
  PAGODA_ASSIGN_OR_RETURN(a->wkv_a_, w.Linear(name("attn_kv_a_mqa.weight"), c.n_embd, a->latent_width()));
  PAGODA_ASSIGN_OR_RETURN(a->kv_a_norm_, w.Vector(name("attn_kv_a_norm.weight"), a->kv_lora_));
  if (m.split_kv_b) {
    PAGODA_ASSIGN_OR_RETURN(a->k_b_, w.Stacked(name("attn_k_b.weight"), a->nope_, a->kv_lora_, a->n_head_));
    PAGODA_ASSIGN_OR_RETURN(a->v_b_, w.Stacked(name("attn_v_b.weight"), a->kv_lora_, a->v_dim_, a->n_head_));
  } else {
    // attn_kv_b [kv_lora -> n_head * (nope + v)]: per head nope rows of W_UK,
    // then v rows of W_UV. W_UV is used in place; W_UK is transposed.
    const std::string kv_b = name("attn_kv_b.weight");
    const int64_t per_head = a->nope_ + a->v_dim_;
    PAGODA_ASSIGN_OR_RETURN(TensorView t, w.Matrix(kv_b, a->kv_lora_, a->n_head_ * per_head));
    a->k_b_owned_.resize(a->n_head_ * a->kv_lora_ * a->nope_);
    std::vector<float> row(a->kv_lora_);
    for (int64_t h = 0; h < a->n_head_; ++h) {
      float* kb = a->k_b_owned_.data() + h * a->kv_lora_ * a->nope_;  // [kv_lora][nope]
      for (int64_t i = 0; i < a->nope_; ++i) {
        Status st = kernels::DequantizeRow(t.type, t.row(h * per_head + i), row.data(), a->kv_lora_);
        if (!st.ok()) return st.WithContext(w.file().path() + ": tensor '" + kv_b + "'");
        for (int64_t j = 0; j < a->kv_lora_; ++j) kb[j * a->nope_ + i] = row[j];
      }
      TensorView k;
      k.name = kv_b + " (W_UK^T head " + std::to_string(h) + ")";
      k.type = DType::kF32;
      k.n_dims = 2;
      k.ne = {a->nope_, a->kv_lora_, 1, 1};
      k.data = kb;
      k.nbytes = a->kv_lora_ * a->nope_ * static_cast<int64_t>(sizeof(float));
      a->k_b_.push_back(PhasedWeight::Shared(k));
      TensorView v = t;
      v.name = kv_b + " (W_UV head " + std::to_string(h) + ")";
      v.n_dims = 2;
      v.ne = {a->kv_lora_, a->v_dim_, 1, 1};
      v.data = t.row(h * per_head + a->nope_);
      v.nbytes = a->v_dim_ * t.row_bytes();
      v.packed = nullptr;
      a->v_b_.push_back(PhasedWeight::Shared(v));
    }
  }
  PAGODA_ASSIGN_OR_RETURN(a->wo_, w.Linear(name("attn_output.weight"), a->n_head_ * a->v_dim_, c.n_embd));
  if (mode == MlaMode::kDecompress) {
    // W_UK[h] as a [kv_lora -> nope] matrix: the transpose of k_b[h].
    a->k_up_owned_.resize(a->n_head_ * a->nope_ * a->kv_lora_);
    std::vector<float> row(a->nope_);
    for (int64_t h = 0; h < a->n_head_; ++h) {
      const TensorView& kb = a->k_b_[h].prefill();  // [kv_lora rows of nope]
      float* up = a->k_up_owned_.data() + h * a->nope_ * a->kv_lora_;  // [nope][kv_lora]
      for (int64_t j = 0; j < a->kv_lora_; ++j) {
        Status st = kernels::DequantizeRow(kb.type, kb.row(j), row.data(), a->nope_);
        if (!st.ok()) return st.WithContext(w.file().path());
        for (int64_t i = 0; i < a->nope_; ++i) up[i * a->kv_lora_ + j] = row[i];
      }
      TensorView t;
      t.name = "W_UK head " + std::to_string(h);
      t.type = DType::kF32;
      t.n_dims = 2;
      t.ne = {a->kv_lora_, a->nope_, 1, 1};
      t.data = up;
      t.nbytes = a->nope_ * a->kv_lora_ * static_cast<int64_t>(sizeof(float));
      a->k_up_.push_back(t);
    }
  }
  return a;
}

void MlaAttention::PerHeadMatMul(const ForwardContext& ctx, const std::vector<PhasedWeight>& w, const float* x,
                                 int64_t n_in, float* y, int64_t n_out) const {
  thread_local std::vector<kernels::MatMulGroupTarget> targets;
  targets.clear();
  const int64_t n = ctx.n_tokens;
  for (int64_t h = 0; h < n_head_; ++h) {
    for (const PhaseRun& r : ctx.runs) {
      targets.push_back({&w[h][r.phase], x + (h * n + r.begin) * n_in, r.n, y + (h * n + r.begin) * n_out});
    }
  }
  kernels::MatMulGrouped(targets, *ctx.pool);
}

KvLayerSpec MlaAttention::kv_spec() const {
  return KvLayerSpec{1, static_cast<int32_t>(latent_width()), 0};
}

int64_t MlaAttention::ScratchFloats(int64_t n) const {
  return Round16(n * q_width()) + Round16(n * q_lora_) + Round16(n * latent_width()) +
         Round16(n * n_head_ * std::max(latent_width(), v_dim_)) + Round16(n * n_head_ * kv_lora_) +
         Round16(n * n_head_ * v_dim_) + Round16(n * n_head_ * std::max(nope_, kv_lora_));
}

void MlaAttention::Forward(const ForwardContext& ctx, int layer, const float* x, float* out) const {
  const int64_t n = ctx.n_tokens, qk = qk_dim(), lw = latent_width();
  float* q = ctx.scratch;                               // [n, n_head, nope + rope]
  float* qa = q + Round16(n * q_width());               // [n, q_lora]
  float* kva = qa + Round16(n * q_lora_);               // [n, kv_lora + rope]
  float* qabs = kva + Round16(n * lw);                  // [n, n_head, kv_lora + rope]
  float* olat = qabs + Round16(n * n_head_ * std::max(lw, v_dim_));  // [n, n_head, kv_lora]
  float* o = olat + Round16(n * n_head_ * kv_lora_);    // [n, n_head, v_dim]
  float* gin = o + Round16(n * n_head_ * v_dim_);       // [n_head, n, max(nope, kv_lora)] per-head inputs

  if (q_lora_ > 0) {
    const PhasedTarget first[] = {{&wq_a_, qa}, {&wkv_a_, kva}};
    PhasedMatMulShared(first, x, ctx.runs, *ctx.pool);
    kernels::RmsNorm(qa, q_a_norm_, rms_eps_, n, q_lora_, qa);
    PhasedMatMul(wq_b_, qa, ctx.runs, q, *ctx.pool);
  } else {
    const PhasedTarget first[] = {{&wq_, q}, {&wkv_a_, kva}};
    PhasedMatMulShared(first, x, ctx.runs, *ctx.pool);
  }
  for (int64_t t = 0; t < n; ++t) kernels::RmsNorm(kva + t * lw, kv_a_norm_, rms_eps_, 1, kv_lora_, kva + t * lw);
  // RoPE on the rope part of each head of q and on the shared k_pe (GPT-J
  // pairs: DeepSeek's weights are not permuted for NeoX).
  kernels::Rope(q + nope_, n, q_width(), static_cast<int>(n_head_), static_cast<int>(qk),
                static_cast<int>(rope_), false, ctx.rope_cos, ctx.rope_sin);
  kernels::Rope(kva + kv_lora_, n, lw, 1, static_cast<int>(rope_), static_cast<int>(rope_), false,
                ctx.rope_cos, ctx.rope_sin);
  for (int64_t t = 0; t < n; ++t) ctx.kv->WriteK(layer, ctx.seq_ids[t], ctx.positions[t], kva + t * lw);
  if (mode_ == MlaMode::kDecompress) {
    AttendDecompressed(ctx, layer, q, o);
    PhasedMatMul(wo_, o, ctx.runs, out, *ctx.pool);
    return;
  }

  // Absorb W_UK into the query: qabs[t, h] = [k_b[h] q_nope[t, h] | q_pe[t, h]].
  // Every head's product in one pool run, through olat ([n_head][n][kv_lora]
  // here; attention overwrites it).
  for (int64_t h = 0; h < n_head_; ++h) {
    for (int64_t t = 0; t < n; ++t) {
      std::memcpy(gin + (h * n + t) * nope_, q + t * q_width() + h * qk, nope_ * sizeof(float));
    }
  }
  PerHeadMatMul(ctx, k_b_, gin, nope_, olat, kv_lora_);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < n_head_; ++h) {
      float* dst = qabs + (t * n_head_ + h) * lw;
      std::memcpy(dst, olat + (h * n + t) * kv_lora_, kv_lora_ * sizeof(float));
      std::memcpy(dst + kv_lora_, q + t * q_width() + h * qk + nope_, rope_ * sizeof(float));
    }
  }
  // One KV head over the latent rows; V is the latent part of the same rows.
  for (int s = 0; s < ctx.n_seqs; ++s) {
    kernels::KvView v = ctx.kv->View(layer, ctx.seqs[s].seq_id);
    v.v_blocks = v.k_blocks;
    v.v_pos_stride = v.k_pos_stride;
    v.v_head_stride = v.k_head_stride;
    v.v_scales = v.k_scales;
    ctx.attn_seqs[s].kv = v;
    ctx.attn_seqs[s].rows = ctx.seqs[s].rows;
    ctx.attn_seqs[s].n_rows = ctx.seqs[s].n_rows;
  }
  kernels::AttentionShape shape;
  shape.n_head = static_cast<int>(n_head_);
  shape.n_head_kv = 1;
  shape.head_dim_k = static_cast<int>(lw);
  shape.head_dim_v = static_cast<int>(kv_lora_);
  shape.scale = scale_;
  kernels::Attention(shape, qabs, n_head_ * lw, ctx.positions, ctx.attn_seqs, ctx.n_seqs, olat,
                     n_head_ * kv_lora_, *ctx.pool);

  // Expand each head's latent output with W_UV, all heads in one pool run
  // (through qabs, [n_head][n][v_dim], no longer needed).
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < n_head_; ++h) {
      std::memcpy(gin + (h * n + t) * kv_lora_, olat + (t * n_head_ + h) * kv_lora_, kv_lora_ * sizeof(float));
    }
  }
  PerHeadMatMul(ctx, v_b_, gin, kv_lora_, qabs, v_dim_);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < n_head_; ++h) {
      std::memcpy(o + (t * n_head_ + h) * v_dim_, qabs + (h * n + t) * v_dim_, v_dim_ * sizeof(float));
    }
  }
  PhasedMatMul(wo_, o, ctx.runs, out, *ctx.pool);
}

void MlaAttention::AttendDecompressed(const ForwardContext& ctx, int layer, const float* q, float* o) const {
  const int64_t lw = latent_width(), qk = qk_dim(), kw = n_head_ * qk, vw = n_head_ * v_dim_;
  thread_local std::vector<float> lat, kn, kbuf, vbuf;
  thread_local std::vector<const void*> kblock, vblock;
  for (int s = 0; s < ctx.n_seqs; ++s) {
    const SeqRows& sr = ctx.seqs[s];
    int32_t n_pos = 0;
    for (int32_t r = 0; r < sr.n_rows; ++r) n_pos = std::max(n_pos, ctx.positions[sr.rows[r]] + 1);
    // The sequence's latents as stored (dequantized), [n_pos, kv_lora + rope].
    const kernels::KvView view = ctx.kv->View(layer, sr.seq_id);
    const int64_t elem = kernels::KvTypeSize(view.type);
    const bool scaled = kernels::KvTypeHasScales(view.type);
    lat.resize(n_pos * lw);
    for (int32_t p = 0; p < n_pos; ++p) {
      const int32_t b = p / view.block_size, slot = p % view.block_size;
      const auto* src = static_cast<const uint8_t*>(view.k_blocks[b]) + slot * view.k_pos_stride * elem;
      const float scale = scaled ? kernels::KvScaleValue(view.k_scales[b][slot]) : 1.0f;
      kernels::LoadKvRow(src, lw, view.type, scale, lat.data() + p * lw);
    }
    // Per-head keys [n_pos, n_head, nope + rope] and values [n_pos, n_head, v].
    kn.resize(n_pos * std::max(nope_, v_dim_));
    kbuf.resize(n_pos * kw);
    vbuf.resize(n_pos * vw);
    thread_local std::vector<float> c_kv;
    c_kv.resize(n_pos * kv_lora_);
    for (int32_t p = 0; p < n_pos; ++p) {
      std::memcpy(c_kv.data() + p * kv_lora_, lat.data() + p * lw, kv_lora_ * sizeof(float));
    }
    for (int64_t h = 0; h < n_head_; ++h) {
      kernels::MatMul(k_up_[h], c_kv.data(), n_pos, kn.data(), *ctx.pool);  // [n_pos, nope]
      for (int32_t p = 0; p < n_pos; ++p) {
        float* dst = kbuf.data() + p * kw + h * qk;
        std::memcpy(dst, kn.data() + p * nope_, nope_ * sizeof(float));
        std::memcpy(dst + nope_, lat.data() + p * lw + kv_lora_, rope_ * sizeof(float));
      }
      kernels::MatMul(v_b_[h].prefill(), c_kv.data(), n_pos, kn.data(), *ctx.pool);  // [n_pos, v]
      for (int32_t p = 0; p < n_pos; ++p) {
        std::memcpy(vbuf.data() + p * vw + h * v_dim_, kn.data() + p * v_dim_, v_dim_ * sizeof(float));
      }
    }
    // Ordinary multi-head attention over them (an f32 one-block view).
    kblock.assign(1, kbuf.data());
    vblock.assign(1, vbuf.data());
    kernels::AttentionSeq seq;
    seq.kv.type = KvType::kF32;
    seq.kv.k_blocks = kblock.data();
    seq.kv.v_blocks = vblock.data();
    seq.kv.block_size = n_pos;
    seq.kv.k_pos_stride = kw;
    seq.kv.k_head_stride = qk;
    seq.kv.v_pos_stride = vw;
    seq.kv.v_head_stride = v_dim_;
    seq.rows = sr.rows;
    seq.n_rows = sr.n_rows;
    kernels::AttentionShape shape;
    shape.n_head = static_cast<int>(n_head_);
    shape.n_head_kv = static_cast<int>(n_head_);
    shape.head_dim_k = static_cast<int>(qk);
    shape.head_dim_v = static_cast<int>(v_dim_);
    shape.scale = scale_;
    kernels::Attention(shape, q, q_width(), ctx.positions, &seq, 1, o, vw, *ctx.pool);
  }
}

}  // namespace pagoda
