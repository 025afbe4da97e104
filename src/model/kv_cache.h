// KvCache: where attention layers keep the keys and values of past positions,
// per layer and sequence. The model hands float rows to WriteK/WriteV, which
// store them in the cache's element type (KvType: f16 by default, as
// llama.cpp; f32, bf16, fp8_e4m3 or int8 with per-(position, head) scales, see
// docs/KV_CACHE.md), and reads them through View(), a typed block list the
// attention kernel walks, so a paged cache (src/kv, block tables) implements
// the same interface.
// What a position stores is decided per architecture through KvCacheSpec (MLA
// stores one compressed latent as "K" and no V).
// Owned by the engine thread; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "kernels/cpu/ops.h"
#include "model/batch.h"

namespace pagoda {

using kernels::KvType;

struct KvLayerSpec {
  int32_t n_head_kv = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;  // 0: the layer stores no V
  int64_t k_width() const { return static_cast<int64_t>(n_head_kv) * head_dim_k; }
  int64_t v_width() const { return static_cast<int64_t>(n_head_kv) * head_dim_v; }
  bool operator==(const KvLayerSpec&) const = default;
};

struct KvCacheSpec {
  std::vector<KvLayerSpec> layers;  // one per model layer
  bool operator==(const KvCacheSpec&) const = default;
};

class KvCache {
 public:
  virtual ~KvCache() = default;

  virtual const KvCacheSpec& spec() const = 0;
  virtual KvType type() const = 0;
  virtual int32_t n_seq_max() const = 0;
  // Positions a sequence can hold (a paged cache: what is free right now).
  virtual int32_t capacity() const = 0;
  // Number of positions of `seq` written so far (0 for an unknown sequence).
  virtual int32_t SequenceLength(int32_t seq) const = 0;

  // Checks that every token of `batch` can be stored (seq id valid, position
  // within capacity, no gap after the sequence's last position) and marks the
  // positions as used. Errors: InvalidArgument, ResourceExhausted (full).
  virtual Status Prepare(const Batch& batch) = 0;
  // Stores the K row ([k_width] floats) / V row ([v_width] floats) of a
  // prepared (seq, pos), converted to type().
  virtual void WriteK(int layer, int32_t seq, int32_t pos, const float* row) = 0;
  virtual void WriteV(int layer, int32_t seq, int32_t pos, const float* row) = 0;
  // Read view of the prepared positions of `seq` in `layer`; valid until the
  // next non-const call.
  virtual kernels::KvView View(int layer, int32_t seq) const = 0;

  // Forgets positions >= n_pos of `seq` (rejected speculative tokens, reuse).
  virtual void Truncate(int32_t seq, int32_t n_pos) = 0;
  void RemoveSequence(int32_t seq) { Truncate(seq, 0); }
};

// The simple cache: every sequence owns n_ctx contiguous positions per layer,
// K as [n_ctx, k_width] and V as [n_ctx, v_width] elements of `type`,
// allocated up front. Scaled types (fp8_e4m3, int8) keep their scale bytes per
// kKvScaleGroup positions ([n_head_kv][kKvScaleGroup], like a paged cache's
// blocks), so the view is a list of kKvScaleGroup-position blocks into the
// same memory.
class ContiguousKvCache final : public KvCache {
 public:
  static Result<std::unique_ptr<ContiguousKvCache>> Create(const KvCacheSpec& spec,
                                                           int32_t n_seq_max, int32_t n_ctx,
                                                           KvType type = KvType::kF16);

  const KvCacheSpec& spec() const override { return spec_; }
  KvType type() const override { return type_; }
  int32_t n_seq_max() const override { return n_seq_max_; }
  int32_t capacity() const override { return n_ctx_; }
  int32_t SequenceLength(int32_t seq) const override;
  Status Prepare(const Batch& batch) override;
  void WriteK(int layer, int32_t seq, int32_t pos, const float* row) override;
  void WriteV(int layer, int32_t seq, int32_t pos, const float* row) override;
  kernels::KvView View(int layer, int32_t seq) const override;
  void Truncate(int32_t seq, int32_t n_pos) override;

 private:
  ContiguousKvCache() = default;
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  // Element `pos * width` of the region starting at base.
  void* Element(void* base, int64_t width, int32_t pos) const;
  void Write(bool is_k, int layer, int32_t seq, int32_t pos, const float* row);

  KvCacheSpec spec_;
  KvType type_ = KvType::kF16;
  int32_t n_seq_max_ = 0;
  int32_t n_ctx_ = 0;
  std::unique_ptr<void, FreeDeleter> data_;
  // Start of K / V of (layer, seq) at [layer * n_seq_max + seq]; the views
  // point into these arrays (a one-block "block table").
  std::vector<void*> k_base_;
  std::vector<void*> v_base_;
  // Scaled types: per (layer, seq) at [layer * n_seq_max + seq], the group
  // starts and their scale bytes ([n_head_kv][kKvScaleGroup] per group).
  std::vector<std::vector<void*>> k_groups_, v_groups_;
  std::vector<std::vector<uint8_t*>> k_group_scales_, v_group_scales_;
  std::vector<uint8_t> scales_;  // [layers][seq][groups][K, V][n_head_kv][kKvScaleGroup]
  std::vector<int32_t> length_;  // [n_seq_max]
  std::vector<int32_t> prepare_scratch_;
};

}  // namespace pagoda
