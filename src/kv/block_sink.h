// BlockSink: where a request's finished prompt blocks go when they leave
// the engine as they are computed (a prefill replica's KV transfer to its
// decode replica, kvtransfer/kv_transfer_sender.h). The engine calls
// OnBlock on its own thread, in chain order, once per full prompt block
// (cached ones included), right after the step that completed it, so the
// transfer overlaps the rest of the prefill.
#pragma once

#include <cstdint>
#include <span>

#include "kv/block_hash.h"

namespace pagoda::kv {

class BlockSink {
 public:
  virtual ~BlockSink() = default;
  // `payload` is the pool block ([layout.block_bytes]), valid only during
  // the call: copy what is kept, and never block (the engine thread steps
  // every running sequence).
  virtual void OnBlock(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
                       const void* payload) = 0;
};

}  // namespace pagoda::kv
