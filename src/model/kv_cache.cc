#include "model/kv_cache.h"

#include <algorithm>
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
  const bool scaled = kernels::KvTypeHasScales(type);
  const int32_t group = kernels::kKvScaleGroup;
  // Scaled types: whole view blocks of kKvScaleGroup positions.
  const int64_t n_alloc = scaled ? (int64_t{n_ctx} + group - 1) / group * group : n_ctx;
  const int64_t per_line = 64 / elem;
  auto round_line = [per_line](int64_t n) { return (n + per_line - 1) / per_line * per_line; };
  int64_t total = 0;
  for (const KvLayerSpec& l : spec.layers) {
    if (l.n_head_kv < 1 || l.head_dim_k < 1 || l.head_dim_v < 0) {
      return InvalidArgument("KV cache layer spec has non-positive dimensions");
    }
    // k_width <= 2^31 * 2^31 and n_ctx < 2^31 could still overflow: check each step.
    int64_t k = 0, v = 0, per_seq = 0, all = 0;
    if (__builtin_mul_overflow(l.k_width(), n_alloc, &k) ||
        __builtin_mul_overflow(l.v_width(), n_alloc, &v) ||
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
      p += round_line(l.k_width() * n_alloc) * elem;
      cache->v_base_.push_back(p);
      p += round_line(l.v_width() * n_alloc) * elem;
    }
  }
  if (scaled) {
    const int64_t n_groups = n_alloc / group;
    int64_t n_scales = 0;
    for (const KvLayerSpec& l : spec.layers) n_scales += 2 * n_groups * l.n_head_kv * group * n_seq_max;
    cache->scales_.assign(static_cast<size_t>(n_scales), 0);
    uint8_t* sc = cache->scales_.data();
    const size_t n_views = spec.layers.size() * static_cast<size_t>(n_seq_max);
    cache->k_groups_.resize(n_views);
    cache->v_groups_.resize(n_views);
    cache->k_group_scales_.resize(n_views);
    cache->v_group_scales_.resize(n_views);
    for (size_t li = 0; li < spec.layers.size(); ++li) {
      const KvLayerSpec& l = spec.layers[li];
      for (int32_t s = 0; s < n_seq_max; ++s) {
        const size_t i = li * n_seq_max + s;
        for (int64_t g = 0; g < n_groups; ++g) {
          cache->k_groups_[i].push_back(static_cast<char*>(cache->k_base_[i]) + g * group * l.k_width());
          cache->v_groups_[i].push_back(static_cast<char*>(cache->v_base_[i]) + g * group * l.v_width());
          cache->k_group_scales_[i].push_back(sc);
          sc += l.n_head_kv * group;
          cache->v_group_scales_[i].push_back(sc);
          sc += l.n_head_kv * group;
        }
      }
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

void ContiguousKvCache::Write(bool is_k, int layer, int32_t seq, int32_t pos, const float* row) {
  const KvLayerSpec& l = spec_.layers[layer];
  const int64_t width = is_k ? l.k_width() : l.v_width();
  const size_t i = static_cast<size_t>(layer) * n_seq_max_ + seq;
  if (kernels::KvTypeHasScales(type_)) {
    const int32_t group = kernels::kKvScaleGroup;
    const auto& groups = is_k ? k_groups_[i] : v_groups_[i];
    uint8_t* scales = (is_k ? k_group_scales_[i] : v_group_scales_[i])[pos / group] + pos % group;
    kernels::StoreKvRowQuantized(row, l.n_head_kv, is_k ? l.head_dim_k : l.head_dim_v, type_,
                                 static_cast<uint8_t*>(groups[pos / group]) + (pos % group) * width, scales,
                                 group);
    return;
  }
  kernels::StoreKvRow(row, width, type_, Element(is_k ? k_base_[i] : v_base_[i], width, pos));
}

void ContiguousKvCache::WriteK(int layer, int32_t seq, int32_t pos, const float* row) {
  Write(true, layer, seq, pos, row);
}

void ContiguousKvCache::WriteV(int layer, int32_t seq, int32_t pos, const float* row) {
  if (spec_.layers[layer].head_dim_v == 0) return;
  Write(false, layer, seq, pos, row);
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
  if (kernels::KvTypeHasScales(type_)) {
    const size_t i = static_cast<size_t>(layer) * n_seq_max_ + seq;
    v.k_blocks = k_groups_[i].data();
    v.v_blocks = v_groups_[i].data();
    v.k_scales = k_group_scales_[i].data();
    v.v_scales = v_group_scales_[i].data();
    v.block_size = kernels::kKvScaleGroup;
  }
  return v;
}

void ContiguousKvCache::Truncate(int32_t seq, int32_t n_pos) {
  PAGODA_CHECK(seq >= 0 && seq < n_seq_max_ && n_pos >= 0);
  if (n_pos >= length_[seq]) return;
  length_[seq] = n_pos;  // a rewrite replaces codes and scales alike
}

}  // namespace pagoda
