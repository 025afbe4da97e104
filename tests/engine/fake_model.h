// FakeModel: a Model whose logits are a deterministic function of the
// sequence's tokens, read back from the KV cache, so a test can check that
// the scheduler fed every position (chunks, adopted prefix blocks, recompute
// after preemption) and can predict every generated token. One layer; K holds
// the token id and V the position, as f32 (use KvType::kF32). Records the
// batches it ran.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/model.h"

namespace pagoda::testing {

class FakeModel final : public Model {
 public:
  static constexpr int64_t kVocab = 64;

  FakeModel() {
    config_.arch = "fake";
    config_.n_vocab = kVocab;
    config_.n_layer = 1;
    spec_.layers.push_back(KvLayerSpec{1, 1, 1});
  }

  const ModelConfig& config() const override { return config_; }
  const KvCacheSpec& kv_cache_spec() const override { return spec_; }

  // The token that follows `tokens` (the argmax of their logits).
  static int32_t Next(std::span<const int32_t> tokens) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t t : tokens) h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull;
    return static_cast<int32_t>((h >> 17) % kVocab);
  }
  // Greedy continuation of `prompt`, max_tokens long.
  static std::vector<int32_t> Greedy(std::vector<int32_t> prompt, int max_tokens) {
    std::vector<int32_t> out;
    for (int i = 0; i < max_tokens; ++i) {
      out.push_back(Next(prompt));
      prompt.push_back(out.back());
    }
    return out;
  }

  Status Run(const Batch& batch, KvCache& kv, const ForwardOutputs& outputs) override {
    const std::span<float> logits = outputs.logits;
    if (static_cast<int64_t>(logits.size()) < batch.n_outputs() * kVocab) return InvalidArgument("logits too small");
    if (kv.type() != KvType::kF32) return InvalidArgument("FakeModel needs an f32 KV cache");
    PAGODA_RETURN_IF_ERROR(kv.Prepare(batch));
    if (before_forward) {
      auto hook = std::move(before_forward);
      before_forward = nullptr;
      hook();
    }
    batches.push_back(batch);
    for (int64_t i = 0; i < batch.size(); ++i) {
      // Interruption (Model::set_interrupt) half-way: half the K/V written.
      if (i == batch.size() / 2 && interrupted()) {
        ++interrupted_forwards;
        return DeadlineExceeded("forward interrupted");
      }
      const float k = static_cast<float>(batch.tokens[i]);
      const float v = static_cast<float>(batch.positions[i]);
      kv.WriteK(0, batch.seq_ids[i], batch.positions[i], &k);
      kv.WriteV(0, batch.seq_ids[i], batch.positions[i], &v);
    }
    float* out = logits.data();
    for (int64_t i = 0; i < batch.size(); ++i) {
      if (!batch.want_logits[i]) continue;
      const kernels::KvView view = kv.View(0, batch.seq_ids[i]);
      std::vector<int32_t> seq;
      for (int32_t p = 0; p <= batch.positions[i]; ++p) {
        const float* k = static_cast<const float*>(view.k_blocks[p / view.block_size]);
        const float* v = static_cast<const float*>(view.v_blocks[p / view.block_size]);
        if (v[(p % view.block_size) * view.v_pos_stride] != static_cast<float>(p)) {
          return Internal("KV position mismatch");
        }
        seq.push_back(static_cast<int32_t>(k[(p % view.block_size) * view.k_pos_stride]));
      }
      const int32_t next = Next(seq);
      for (int64_t j = 0; j < kVocab; ++j) {
        out[j] = j == next ? 4.0f : -static_cast<float>((j * 7 + seq.size()) % 13) * 0.25f;
      }
      out += kVocab;
    }
    return Status::Ok();
  }

  // Runs once, inside the next Forward (after Prepare): e.g. a Submit from
  // another "thread" while a step runs.
  std::function<void()> before_forward;
  int interrupted_forwards = 0;
  std::vector<Batch> batches;

 private:
  ModelConfig config_;
  KvCacheSpec spec_;
};

}  // namespace pagoda::testing
