#include "model/kv_cache.h"

#include <cstdlib>
#include <string>

namespace pagoda {

void ContiguousKvCache::FreeDeleter::operator()(void* p) const { std::free(p); }

Result<std::unique_ptr<ContiguousKvCache>> ContiguousKvCache::Create(const KvCacheSpec& spec,
                                                                     int32_t n_seq_max,
                                                                     int32_t n_ctx, KvType type) {
  if (spec.layers.empty()) return InvalidArgument("KV cache spec has no layers");
  if (n_seq_max < 1 || n_ctx < 1) {
    return InvalidArgument("KV cache needs n_seq_max >= 1 and n_ctx >= 1, got " +
                           std::to_string(n_seq_max) + " and " + std::to_string(n_ctx));
  }
  // Each region rounded up to 64 bytes so every row base stays 64-byte aligned
  // when rows are multiples of 64 bytes. Sizes below count elements.
  const int64_t elem = kernels::KvTypeSize(type);
  const int64_t per_line = 64 / elem;
  auto round_line = [per_line](int64_t n) { return (n + per_line - 1) / per_line * per_line; };
  int64_t total = 0;
  for (const KvLayerSpec& l : spec.layers) {
    if (l.n_head_kv < 1 || l.head_dim_k < 1 || l.head_dim_v < 0) {
      return InvalidArgument("KV cache layer spec has non-positive dimensions");
    }
    // k_width <= 2^31 * 2^31 and n_ctx < 2^31 could still overflow: check each step.
    int64_t k = 0, v = 0, per_seq = 0, all = 0;
    if (__builtin_mul_overflow(l.k_width(), int64_t{n_ctx}, &k) ||
        __builtin_mul_overflow(l.v_width(), int64_t{n_ctx}, &v) ||
        __builtin_add_overflow(k, v, &per_seq) ||
        __builtin_mul_overflow(per_seq + 2 * per_line, int64_t{n_seq_max}, &all) ||
        __builtin_add_overflow(total, all, &total) || total > (int64_t{1} << 40) / elem) {
      return ResourceExhausted("KV cache of " + std::to_string(n_seq_max) + " x " +
                               std::to_string(n_ctx) + " positions is too large");
    }
  }
  auto cache = std::unique_ptr<ContiguousKvCache>(new ContiguousKvCache());
  // Not zeroed: the pages are touched only as positions are written.
  void* mem = std::aligned_alloc(64, static_cast<size_t>(round_line(total) * elem));
  if (mem == nullptr) {
    return ResourceExhausted("cannot allocate KV cache of " +
                             std::to_string(total * elem >> 20) + " MiB");
  }
  cache->data_.reset(mem);
  cache->spec_ = spec;
  cache->type_ = type;
  cache->n_seq_max_ = n_seq_max;
  cache->n_ctx_ = n_ctx;
  cache->length_.assign(n_seq_max, 0);
  auto* p = static_cast<char*>(mem);
  for (const KvLayerSpec& l : spec.layers) {
    for (int32_t s = 0; s < n_seq_max; ++s) {
      cache->k_base_.push_back(p);
      p += round_line(l.k_width() * n_ctx) * elem;
      cache->v_base_.push_back(p);
      p += round_line(l.v_width() * n_ctx) * elem;
    }
  }
  return cache;
}

int32_t ContiguousKvCache::SequenceLength(int32_t seq) const {
  return seq >= 0 && seq < n_seq_max_ ? length_[seq] : 0;
}

Status ContiguousKvCache::Prepare(const Batch& batch) {
  // Validate everything before marking anything, so a failed Prepare changes nothing.
  std::vector<int32_t>& len = prepare_scratch_;
  len.assign(length_.begin(), length_.end());
  for (int64_t i = 0; i < batch.size(); ++i) {
    const int32_t seq = batch.seq_ids[i];
    const int32_t pos = batch.positions[i];
    if (seq < 0 || seq >= n_seq_max_) {
      return InvalidArgument("token " + std::to_string(i) + ": sequence id " + std::to_string(seq) +
                             " outside [0, " + std::to_string(n_seq_max_) + ")");
    }
    if (pos < 0 || pos > len[seq]) {
      return InvalidArgument("token " + std::to_string(i) + ": position " + std::to_string(pos) +
                             " of sequence " + std::to_string(seq) + " leaves a gap (sequence has " +
                             std::to_string(len[seq]) + " positions)");
    }
    if (pos >= n_ctx_) {
      return ResourceExhausted("sequence " + std::to_string(seq) + " is full (" +
                               std::to_string(n_ctx_) + " positions)");
    }
    if (pos == len[seq]) ++len[seq];
  }
  length_.swap(len);
  return Status::Ok();
}

void* ContiguousKvCache::Element(void* base, int64_t width, int32_t pos) const {
  return static_cast<char*>(base) + pos * width * kernels::KvTypeSize(type_);
}

void ContiguousKvCache::WriteK(int layer, int32_t seq, int32_t pos, const float* row) {
  const int64_t width = spec_.layers[layer].k_width();
  kernels::StoreKvRow(row, width, type_, Element(k_base_[layer * n_seq_max_ + seq], width, pos));
}

void ContiguousKvCache::WriteV(int layer, int32_t seq, int32_t pos, const float* row) {
  const int64_t width = spec_.layers[layer].v_width();
  kernels::StoreKvRow(row, width, type_, Element(v_base_[layer * n_seq_max_ + seq], width, pos));
}

kernels::KvView ContiguousKvCache::View(int layer, int32_t seq) const {
  const KvLayerSpec& l = spec_.layers[layer];
  kernels::KvView v;
  v.type = type_;
  v.k_blocks = &k_base_[layer * n_seq_max_ + seq];
  v.v_blocks = &v_base_[layer * n_seq_max_ + seq];
  v.block_size = n_ctx_;
  v.k_pos_stride = l.k_width();
  v.k_head_stride = l.head_dim_k;
  v.v_pos_stride = l.v_width();
  v.v_head_stride = l.head_dim_v;
  return v;
}

void ContiguousKvCache::Truncate(int32_t seq, int32_t n_pos) {
  PAGODA_CHECK(seq >= 0 && seq < n_seq_max_ && n_pos >= 0);
  if (n_pos < length_[seq]) length_[seq] = n_pos;
}

}  // namespace pagoda
