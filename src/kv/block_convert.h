// Converting a KV block record's payload to another KV type: a prefill
// replica keeps f16 KV and its decode replica FP8 (docs/KV_OFFLOAD.md,
// "Prefill/decode disaggregation"). Every position's K and V row of every
// layer is read to floats exactly as the attention kernel reads it
// (kernels::LoadKvRow, times the row's scale for scaled types) and stored
// exactly as the pool stores a computed row (kernels::StoreKvRow /
// StoreKvRowQuantized, the scale a function of the row alone). Converting
// a type to itself is the identity; to a narrower type it rounds once more
// than computing in that type would (f32 -> f16 -> e4m3), which
// docs/KV_OFFLOAD.md quantifies.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cpu/ops.h"
#include "kv/block_file.h"

namespace pagoda::kv {

// `layout` as a writer with KV type `type` and `fingerprint` has it
// (block_bytes recomputed; 0 when the widths do not make a pool of that type).
BlockLayout LayoutWithType(const BlockLayout& layout, kernels::KvType type, uint64_t fingerprint);

// Converts one block payload laid out as `from` ([from.block_bytes] at
// `src`) into `to` ([to.block_bytes] at `dst`). InvalidArgument when the two
// layouts differ in anything but the KV type (layers, widths, block size)
// or either is invalid.
Status ConvertBlockPayload(const BlockLayout& from, const void* src, const BlockLayout& to, void* dst);

}  // namespace pagoda::kv
