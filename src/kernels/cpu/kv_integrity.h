// The batched KV integrity check (Backend::KvIntegrityCheck,
// backend_types.h KvIntegrityBatch) over flat arrays, scalar: the rule of
// kv::IntegrityTracker::Check, one result per sequence. Pure; any thread.
#pragma once

#include <cstdint>

#include "kernels/backend_types.h"

namespace pagoda::kernels {

// result[s]: kKvIntact, kKvLengthChanged or the first bad live entry.
void KvIntegrityCheck(const KvIntegrityBatch& batch, int32_t* result);

}  // namespace pagoda::kernels
