#include "model/encoder_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "base/check.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"

namespace pagoda {
namespace {

// x[r] += b for n_rows rows of n floats; b may be null.
void AddBiasRows(float* x, const float* b, int64_t n_rows, int64_t n) {
  if (b == nullptr) return;
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = x + r * n;
    for (int64_t i = 0; i < n; ++i) row[i] += b[i];
  }
}

void AddInto(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void DequantizeRowOrDie(const TensorView& t, int64_t row, float* dst) {
  // The type and row length were checked at load (WeightLoader::Embedding).
  const Status st = kernels::DequantizeRow(t.type, t.row(row), dst, t.ne[0]);
  PAGODA_CHECK(st.ok()) << st.ToString();
}

}  // namespace

Result<std::unique_ptr<EncoderModel>> EncoderModel::Create(std::shared_ptr<const GgufFile> file, ModelConfig config,
                                                           EncoderWeights weights, ThreadPool& pool,
                                                           const ModelOptions& options) {
  if (options.max_batch_tokens < 1) return InvalidArgument("max_batch_tokens must be >= 1");
  // A sequence never splits across micro-batches: room for the longest one.
  const int64_t max_tokens = std::max<int64_t>(options.max_batch_tokens, weights.position_embd.ne[1]);
  return std::unique_ptr<EncoderModel>(
      new EncoderModel(std::move(file), std::move(config), std::move(weights), pool, max_tokens));
}

EncoderModel::EncoderModel(std::shared_ptr<const GgufFile> file, ModelConfig config, EncoderWeights weights,
                           ThreadPool& pool, int64_t max_tokens)
    : file_(std::move(file)), config_(std::move(config)), w_(std::move(weights)), pool_(pool),
      max_tokens_(max_tokens) {
  // One layer, one K element per position, no V: enough for the engine's
  // block accounting; Run never writes it.
  kv_spec_.layers.push_back(KvLayerSpec{1, 1, 0});
  const int64_t n_embd = config_.n_embd, m = max_tokens_;
  const int64_t q_width = config_.n_head * config_.head_dim_k;
  const int64_t kv_width = config_.n_head_kv * config_.head_dim_k;
  x_ = FloatBuffer(m * n_embd);
  y_ = FloatBuffer(m * n_embd);
  q_ = FloatBuffer(m * q_width);
  attn_ = FloatBuffer(m * q_width);
  k_ = FloatBuffer(m * kv_width);
  v_ = FloatBuffer(m * kv_width);
  ff_ = FloatBuffer(m * config_.n_ff);
  row_ = FloatBuffer(n_embd);
  cls_tmp_ = FloatBuffer(w_.has_cls ? w_.cls.n_out() : 1);
  mb_rows_.resize(m);
  row_ids_.resize(m);
  std::iota(row_ids_.begin(), row_ids_.end(), 0);
  dense_.reserve(m);
  seqs_.reserve(m);
  seq_rows_.reserve(m);
  out_index_.reserve(m);
}

int64_t EncoderModel::n_classifier_outputs() const {
  if (!w_.has_cls) return 0;
  return w_.has_cls_out ? w_.cls_out.n_out() : w_.cls.n_out();
}

Status EncoderModel::Classify(std::span<const float> pooled, std::span<float> out) const {
  if (!w_.has_cls) return FailedPrecondition("the model has no classifier head (tensor 'cls.weight')");
  if (static_cast<int64_t>(pooled.size()) != config_.n_embd) {
    return InvalidArgument("pooled vector has " + std::to_string(pooled.size()) + " floats, n_embd is " +
                           std::to_string(config_.n_embd));
  }
  const int64_t n_out = n_classifier_outputs();
  if (static_cast<int64_t>(out.size()) < n_out) {
    return InvalidArgument("classifier output holds " + std::to_string(out.size()) + " floats, " +
                           std::to_string(n_out) + " needed");
  }
  // As llama.cpp's rank pooling (RoBERTa's classification head): tanh(cls x + b), then cls.output.
  float* h = cls_tmp_.data();
  const int64_t n_cls = w_.cls.n_out();
  kernels::MatMul(w_.cls.prefill(), pooled.data(), 1, h, pool_);
  AddBiasRows(h, w_.cls_b, 1, n_cls);
  for (int64_t i = 0; i < n_cls; ++i) h[i] = std::tanh(h[i]);
  if (!w_.has_cls_out) {
    std::copy(h, h + n_cls, out.data());
    return Status::Ok();
  }
  kernels::MatMul(w_.cls_out.prefill(), h, 1, out.data(), pool_);
  AddBiasRows(out.data(), w_.cls_out_b, 1, n_out);
  return Status::Ok();
}

Status EncoderModel::Validate(const Batch& b, const KvCache& kv, const ForwardOutputs& out) {
  const size_t n = b.tokens.size();
  if (b.positions.size() != n || b.seq_ids.size() != n || b.want_logits.size() != n ||
      (!b.decode.empty() && b.decode.size() != n) || (!b.want_hidden.empty() && b.want_hidden.size() != n)) {
    return InvalidArgument("batch arrays differ in length");
  }
  if (kv.spec() != kv_spec_) return InvalidArgument("KV cache layout does not match the model");
  const int64_t need = b.n_hidden_outputs() * config_.n_embd;
  if (static_cast<int64_t>(out.hidden.size()) < need) {
    return InvalidArgument("hidden buffer holds " + std::to_string(out.hidden.size()) + " floats, " +
                           std::to_string(need) + " needed");
  }
  const int64_t n_pos = w_.position_embd.ne[1];
  seqs_.clear();
  out_index_.assign(n, -1);
  int32_t n_out = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string at = "token " + std::to_string(i);
    if (b.want_logits[i]) {
      return InvalidArgument(at + " asks for logits: " + config_.arch +
                             " is an encoder without an LM head (ask for hidden rows)");
    }
    if (b.tokens[i] < 0 || b.tokens[i] >= config_.n_vocab) {
      return InvalidArgument(at + ": id " + std::to_string(b.tokens[i]) + " outside the vocabulary");
    }
    const int32_t id = b.seq_ids[i];
    if (id < 0) return InvalidArgument(at + ": negative sequence id");
    if (static_cast<size_t>(id) >= seq_of_id_.size()) seq_of_id_.resize(id + 1, -1);
    int32_t& s = seq_of_id_[id];
    if (s < 0 || s >= static_cast<int32_t>(seqs_.size()) || seqs_[s].seq_id != id) {
      s = static_cast<int32_t>(seqs_.size());
      seqs_.push_back(Seq{id, 0, 0});
    }
    // Attention looks both ways: a sequence must arrive whole, in order.
    if (b.positions[i] != seqs_[s].n) {
      return InvalidArgument(at + " of sequence " + std::to_string(id) + " is at position " +
                             std::to_string(b.positions[i]) + ", expected " + std::to_string(seqs_[s].n) +
                             ": an encoder needs each sequence whole in one batch (positions 0..n-1 in order)");
    }
    if (b.positions[i] >= n_pos) {
      return InvalidArgument("sequence " + std::to_string(id) + " is longer than the " + std::to_string(n_pos) +
                             " positions of the model");
    }
    ++seqs_[s].n;
    if (!b.want_hidden.empty() && b.want_hidden[i]) out_index_[i] = n_out++;
  }
  // Rows grouped by sequence, in position order.
  int32_t first = 0;
  for (Seq& s : seqs_) {
    s.first = first;
    first += s.n;
  }
  seq_rows_.resize(n);
  for (Seq& s : seqs_) s.n = 0;
  for (size_t i = 0; i < n; ++i) {
    Seq& s = seqs_[seq_of_id_[b.seq_ids[i]]];
    seq_rows_[s.first + s.n++] = static_cast<int32_t>(i);
  }
  return Status::Ok();
}

Status EncoderModel::Run(const Batch& batch, KvCache& kv, const ForwardOutputs& out) {
  PAGODA_RETURN_IF_ERROR(Validate(batch, kv, out));
  PAGODA_RETURN_IF_ERROR(kv.Prepare(batch));
  size_t s0 = 0;
  while (s0 < seqs_.size()) {
    size_t s1 = s0;
    int64_t rows = 0;
    while (s1 < seqs_.size() && rows + seqs_[s1].n <= max_tokens_) rows += seqs_[s1++].n;
    ForwardSequences(batch, s0, s1, out.hidden.data());
    if (interrupted()) return DeadlineExceeded("forward interrupted");
    s0 = s1;
  }
  return Status::Ok();
}

void EncoderModel::ForwardSequences(const Batch& batch, size_t s0, size_t s1, float* hidden) {
  int64_t n = 0;
  dense_.clear();
  for (size_t s = s0; s < s1; ++s) {
    const Seq& seq = seqs_[s];
    std::copy(seq_rows_.begin() + seq.first, seq_rows_.begin() + seq.first + seq.n, mb_rows_.begin() + n);
    dense_.push_back(kernels::DenseSeq{nullptr, seq.n});
    n += seq.n;
  }
  // Each sequence's micro-batch rows are consecutive: rows[j] = offset + j.
  int64_t off = 0;
  for (kernels::DenseSeq& d : dense_) {
    d.rows = row_ids_.data() + off;
    off += d.n_rows;
  }
  run_ = PhaseRun{0, n, Phase::kPrefill};
  Embed(batch, n);
  for (const EncoderBlock& blk : w_.blocks) {
    if (interrupted()) return;
    Layer(blk, n);
  }
  const int64_t n_embd = config_.n_embd;
  for (int64_t r = 0; r < n; ++r) {
    const int32_t o = out_index_[mb_rows_[r]];
    if (o >= 0) std::memcpy(hidden + o * n_embd, x_.data() + r * n_embd, n_embd * sizeof(float));
  }
}

void EncoderModel::Embed(const Batch& batch, int64_t n) {
  const int64_t n_embd = config_.n_embd;
  for (int64_t r = 0; r < n; ++r) {
    const int32_t i = mb_rows_[r];
    float* x = x_.data() + r * n_embd;
    DequantizeRowOrDie(w_.token_embd, batch.tokens[i], x);
    if (!w_.token_type0.empty()) AddInto(x, w_.token_type0.data(), n_embd);
    DequantizeRowOrDie(w_.position_embd, batch.positions[i], row_.data());
    AddInto(x, row_.data(), n_embd);
  }
  kernels::LayerNorm(x_.data(), w_.embd_norm_w, w_.embd_norm_b, w_.norm_eps, n, n_embd, x_.data());
}

void EncoderModel::Layer(const EncoderBlock& blk, int64_t n) {
  const int64_t n_embd = config_.n_embd, n_ff = config_.n_ff;
  const int64_t q_width = config_.n_head * config_.head_dim_k;
  const int64_t kv_width = config_.n_head_kv * config_.head_dim_k;
  const std::span<const PhaseRun> runs(&run_, 1);
  float* x = x_.data();  // [n, n_embd] layer input, then output
  float* y = y_.data();  // [n, n_embd]

  const PhasedTarget qkv[] = {{&blk.wq, q_.data()}, {&blk.wk, k_.data()}, {&blk.wv, v_.data()}};
  PhasedMatMulShared(qkv, x, runs, pool_);
  AddBiasRows(q_.data(), blk.bq, n, q_width);
  AddBiasRows(k_.data(), blk.bk, n, kv_width);
  AddBiasRows(v_.data(), blk.bv, n, kv_width);
  kernels::AttentionShape shape;
  shape.n_head = static_cast<int>(config_.n_head);
  shape.n_head_kv = static_cast<int>(config_.n_head_kv);
  shape.head_dim_k = static_cast<int>(config_.head_dim_k);
  shape.head_dim_v = static_cast<int>(config_.head_dim_k);
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(config_.head_dim_k)));
  kernels::BidirectionalAttention(shape, q_.data(), q_width, k_.data(), kv_width, v_.data(), kv_width,
                                  dense_.data(), static_cast<int>(dense_.size()), attn_.data(), q_width, pool_);
  PhasedMatMul(blk.wo, attn_.data(), runs, y, pool_);
  AddBiasRows(y, blk.bo, n, n_embd);
  AddInto(y, x, n * n_embd);
  kernels::LayerNorm(y, blk.attn_norm_w, blk.attn_norm_b, w_.norm_eps, n, n_embd, x);

  PhasedMatMul(blk.up, x, runs, ff_.data(), pool_);
  AddBiasRows(ff_.data(), blk.b_up, n, n_ff);
  kernels::Gelu(ff_.data(), n * n_ff, ff_.data());
  PhasedMatMul(blk.down, ff_.data(), runs, y, pool_);
  AddBiasRows(y, blk.b_down, n, n_embd);
  AddInto(y, x, n * n_embd);
  kernels::LayerNorm(y, blk.out_norm_w, blk.out_norm_b, w_.norm_eps, n, n_embd, x);
}

}  // namespace pagoda
