#include "model/decoder_model.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"

namespace pagoda {
namespace {

void AddInPlace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

Result<std::unique_ptr<DecoderModel>> DecoderModel::Create(std::shared_ptr<const GgufFile> file,
                                                           ModelConfig config,
                                                           DecoderWeights weights,
                                                           ThreadPool& pool,
                                                           const ModelOptions& options) {
  if (static_cast<int64_t>(weights.blocks.size()) != config.n_layer) {
    return Internal("decoder has " + std::to_string(weights.blocks.size()) + " blocks for " +
                    std::to_string(config.n_layer) + " layers");
  }
  return std::unique_ptr<DecoderModel>(
      new DecoderModel(std::move(file), std::move(config), std::move(weights), pool, options));
}

DecoderModel::DecoderModel(std::shared_ptr<const GgufFile> file, ModelConfig config,
                           DecoderWeights weights, ThreadPool& pool, const ModelOptions& options)
    : file_(std::move(file)),
      config_(std::move(config)),
      w_(std::move(weights)),
      pool_(pool),
      max_tokens_(options.max_batch_tokens) {
  const int64_t n_embd = config_.n_embd;
  int64_t scratch = 0;
  for (const DecoderBlock& b : w_.blocks) {
    kv_spec_.layers.push_back(b.attn->kv_spec());
    scratch = std::max({scratch, b.attn->ScratchFloats(max_tokens_), b.ffn->ScratchFloats(max_tokens_)});
  }
  const int n_half = static_cast<int>(config_.n_rot / 2);
  inv_freq_.resize(n_half);
  if (config_.yarn.enabled) {
    kernels::RopeYarnInvFreq(config_.rope_base, static_cast<int>(config_.n_rot), config_.rope_freq_scale,
                             config_.yarn.n_ctx_orig, config_.yarn.beta_fast, config_.yarn.beta_slow,
                             inv_freq_.data());
  } else {
    kernels::RopeInvFreq(config_.rope_base, static_cast<int>(config_.n_rot), config_.rope_freq_scale,
                         config_.rope_freq_factors.empty() ? nullptr : config_.rope_freq_factors.data(),
                         inv_freq_.data());
  }
  x_ = FloatBuffer(max_tokens_ * n_embd);
  xn_ = FloatBuffer(max_tokens_ * n_embd);
  y_ = FloatBuffer(max_tokens_ * n_embd);
  layer_scratch_ = FloatBuffer(scratch);
  rope_cos_ = FloatBuffer(max_tokens_ * n_half);
  rope_sin_ = FloatBuffer(max_tokens_ * n_half);
  rows_.resize(max_tokens_);
  seqs_.reserve(max_tokens_);
  seq_fill_.reserve(max_tokens_);
  attn_seqs_.resize(max_tokens_);
  out_rows_.reserve(max_tokens_);
  out_decode_.reserve(max_tokens_);
  runs_.resize(max_tokens_);
  out_runs_.resize(max_tokens_);
}

DecodeWeightsInfo DecoderModel::decode_weights_info() const {
  return w_.decode_store ? w_.decode_store->info() : DecodeWeightsInfo{};
}

Status DecoderModel::Validate(const Batch& b, const KvCache& kv, const ForwardOutputs& out) const {
  const size_t n = b.tokens.size();
  if (b.positions.size() != n || b.seq_ids.size() != n || b.want_logits.size() != n ||
      (!b.decode.empty() && b.decode.size() != n) || (!b.want_hidden.empty() && b.want_hidden.size() != n)) {
    return InvalidArgument("batch arrays differ in length");
  }
  if (kv.spec() != kv_spec_) return InvalidArgument("KV cache layout does not match the model");
  const int64_t need = b.n_outputs() * config_.n_vocab;
  if (static_cast<int64_t>(out.logits.size()) < need) {
    return InvalidArgument("logits buffer holds " + std::to_string(out.logits.size()) + " floats, " +
                           std::to_string(need) + " needed");
  }
  const int64_t need_hidden = b.n_hidden_outputs() * config_.n_embd;
  if (static_cast<int64_t>(out.hidden.size()) < need_hidden) {
    return InvalidArgument("hidden buffer holds " + std::to_string(out.hidden.size()) + " floats, " +
                           std::to_string(need_hidden) + " needed");
  }
  for (size_t i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= config_.n_vocab) {
      return InvalidArgument("token " + std::to_string(i) + ": id " + std::to_string(b.tokens[i]) +
                             " outside the vocabulary [0, " + std::to_string(config_.n_vocab) + ")");
    }
  }
  return Status::Ok();
}

Status DecoderModel::Run(const Batch& batch, KvCache& kv, const ForwardOutputs& out) {
  PAGODA_RETURN_IF_ERROR(Validate(batch, kv, out));
  PAGODA_RETURN_IF_ERROR(kv.Prepare(batch));
  OutCursor cursor{out.logits.data(), out.hidden.data()};
  for (int64_t start = 0; start < batch.size(); start += max_tokens_) {
    stopped_ = false;
    ForwardMicroBatch(batch, start, std::min(max_tokens_, batch.size() - start), kv, cursor);
    if (stopped_) return DeadlineExceeded("forward interrupted");
  }
  return Status::Ok();
}

void DecoderModel::GroupBySequence(const int32_t* seq_ids, int64_t n) {
  // Counting sort by sequence in order of first appearance; a batch rarely
  // holds more than a few hundred sequences, so the linear lookup is cheap.
  seqs_.clear();
  seq_fill_.clear();
  for (int64_t t = 0; t < n; ++t) {
    size_t s = 0;
    while (s < seqs_.size() && seqs_[s].seq_id != seq_ids[t]) ++s;
    if (s == seqs_.size()) seqs_.push_back(SeqRows{seq_ids[t], nullptr, 0});
    ++seqs_[s].n_rows;
  }
  int32_t offset = 0;
  for (SeqRows& s : seqs_) {
    s.rows = rows_.data() + offset;
    seq_fill_.push_back(offset);
    offset += s.n_rows;
  }
  for (int64_t t = 0; t < n; ++t) {
    size_t s = 0;
    while (seqs_[s].seq_id != seq_ids[t]) ++s;
    rows_[seq_fill_[s]++] = static_cast<int32_t>(t);
  }
}

void DecoderModel::ForwardMicroBatch(const Batch& b, int64_t start, int64_t n, KvCache& kv,
                                     OutCursor& out) {
  const int64_t n_embd = config_.n_embd;
  const int32_t* positions = b.positions.data() + start;
  const int32_t* seq_ids = b.seq_ids.data() + start;
  float* x = x_.data();    // [n, n_embd]
  float* xn = xn_.data();  // [n, n_embd]
  float* y = y_.data();    // [n, n_embd]

  for (int64_t t = 0; t < n; ++t) {
    Status st = kernels::DequantizeRow(w_.token_embd.type, w_.token_embd.row(b.tokens[start + t]),
                                       x + t * n_embd, n_embd);
    PAGODA_CHECK(st.ok()) << st.ToString();  // type checked at load
  }
  // Without decode copies every run is one: the phases share the weights.
  const bool one_set = w_.decode_store == nullptr;
  const uint8_t* decode = b.decode.empty() ? nullptr : b.decode.data() + start;
  const uint8_t* hidden = b.want_hidden.empty() ? nullptr : b.want_hidden.data() + start;
  out_rows_.clear();
  out_decode_.clear();
  for (int64_t t = 0; t < n; ++t) {
    if (!b.want_logits[start + t] && (hidden == nullptr || !hidden[t])) continue;
    out_rows_.push_back(static_cast<int32_t>(t));
    out_decode_.push_back(decode != nullptr ? decode[t] : 0);
  }
  const int n_runs = SplitPhaseRuns(decode, n, one_set, runs_.data());
  const int n_out_runs = SplitPhaseRuns(out_decode_.data(), static_cast<int64_t>(out_rows_.size()), one_set,
                                        out_runs_.data());
  GroupBySequence(seq_ids, n);
  const int n_half = static_cast<int>(config_.n_rot / 2);
  kernels::RopeTables(inv_freq_.data(), n_half, positions, n, rope_cos_.data(), rope_sin_.data());

  ForwardContext ctx;
  ctx.pool = &pool_;
  ctx.kv = &kv;
  ctx.n_tokens = n;
  ctx.positions = positions;
  ctx.seq_ids = seq_ids;
  ctx.seqs = seqs_.data();
  ctx.n_seqs = static_cast<int>(seqs_.size());
  ctx.rope_cos = rope_cos_.data();
  ctx.rope_sin = rope_sin_.data();
  ctx.attn_seqs = attn_seqs_.data();
  ctx.scratch = layer_scratch_.data();
  ctx.runs = std::span<const PhaseRun>(runs_.data(), n_runs);
  ctx.stats = &stats_;

  const int64_t n_out = static_cast<int64_t>(out_rows_.size());
  for (int64_t l = 0; l < config_.n_layer; ++l) {
    if (interrupted()) return Stop();
    const DecoderBlock& blk = w_.blocks[l];
    kernels::RmsNorm(x, blk.attn_norm, config_.rms_eps, ctx.n_tokens, n_embd, xn);
    blk.attn->Forward(ctx, static_cast<int>(l), xn, y);
    AddInPlace(x, y, ctx.n_tokens * n_embd);
    if (l == config_.n_layer - 1 && n_out < ctx.n_tokens) {
      // Only the rows that need logits go through the last FFN and the head.
      for (int64_t i = 0; i < n_out; ++i) {
        if (out_rows_[i] != i) std::memcpy(x + i * n_embd, x + out_rows_[i] * n_embd, n_embd * sizeof(float));
      }
      ctx.n_tokens = n_out;
      ctx.positions = nullptr;
      ctx.seq_ids = nullptr;
      ctx.n_seqs = 0;
      ctx.runs = std::span<const PhaseRun>(out_runs_.data(), n_out_runs);
      if (n_out == 0) return;
    }
    if (interrupted()) return Stop();  // also between attention and the FFN: half the wait
    kernels::RmsNorm(x, blk.ffn_norm, config_.rms_eps, ctx.n_tokens, n_embd, xn);
    blk.ffn->Forward(ctx, xn, y);
    AddInPlace(x, y, ctx.n_tokens * n_embd);
  }
  kernels::RmsNorm(x, w_.output_norm, config_.rms_eps, n_out, n_embd, xn);
  WriteOutputs(b, start, xn, n_out, n_out_runs, out);
}

void DecoderModel::WriteOutputs(const Batch& b, int64_t start, float* xn, int64_t n_out, int n_out_runs,
                                OutCursor& out) {
  const int64_t n_embd = config_.n_embd;
  int64_t n_logits = 0;
  bool compacted = false;
  for (int64_t i = 0; i < n_out; ++i) {
    const int64_t t = start + out_rows_[i];
    if (!b.want_hidden.empty() && b.want_hidden[t]) {
      std::memcpy(out.hidden, xn + i * n_embd, n_embd * sizeof(float));
      out.hidden += n_embd;
    }
    if (!b.want_logits[t]) {
      compacted = true;
      continue;
    }
    // Rows that want only hidden states leave the head's input.
    if (n_logits != i) std::memcpy(xn + n_logits * n_embd, xn + i * n_embd, n_embd * sizeof(float));
    out_decode_[n_logits++] = out_decode_[i];
  }
  if (n_logits == 0) return;
  if (compacted) {
    n_out_runs = SplitPhaseRuns(out_decode_.data(), n_logits, w_.decode_store == nullptr, out_runs_.data());
  }
  PhasedMatMul(w_.output, xn, std::span<const PhaseRun>(out_runs_.data(), n_out_runs), out.logits, pool_);
  out.logits += n_logits * config_.n_vocab;
}

}  // namespace pagoda
