#include "kernels/cpu/kv_integrity.h"

namespace pagoda::kernels {

void KvIntegrityCheck(const KvIntegrityBatch& b, int32_t* result) {
  for (int32_t s = 0; s < b.n_seqs; ++s) {
    const int32_t r0 = b.recorded_offsets[s];
    const int32_t n = b.recorded_offsets[s + 1] - r0;
    const int32_t l0 = b.live_offsets[s];
    if (b.live_offsets[s + 1] - l0 != n) {
      result[s] = kKvLengthChanged;
      continue;
    }
    result[s] = kKvIntact;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t live = b.live_ids[l0 + i];
      const bool in_range = static_cast<uint32_t>(live) < static_cast<uint32_t>(b.n_blocks);
      if (in_range && live == b.recorded_ids[r0 + i] && b.pool_tags[live] == b.recorded_tags[r0 + i] &&
          b.pool_refs[live] > 0) {
        continue;
      }
      result[s] = i;
      break;
    }
  }
}

}  // namespace pagoda::kernels
