// PagedKvCache: page integrity check, discarding a failed sequence, and the
// test-only fault injection (see kv/integrity_tracker.h).
#include <algorithm>

#include "model/paged_kv_cache.h"

namespace pagoda {
namespace {

// The last table entry whose block only this sequence holds (a fault planted
// there touches exactly one sequence); -1 when none.
int32_t LastPrivateEntry(const kv::BlockTable& t, const kv::BlockPool& pool) {
  for (int32_t i = t.size() - 1; i >= 0; --i) {
    if (pool.ref_count(t[i]) == 1) return i;
  }
  return -1;
}

}  // namespace

void PagedKvCache::CheckIntegrity(std::span<const int32_t> seqs, std::vector<kv::IntegrityFailure>* failures) const {
  integrity_->Check(seqs, tables_, *pool_, failures);
}

void PagedKvCache::DiscardCorrupt(int32_t seq) {
  Sequence& s = seqs_[CheckedSeq(seq)];
  std::vector<kv::BlockId> mine;
  integrity_->Releasable(seq, s.table, *pool_, &mine);
  // Tail first, as Truncate; never registered again, since their contents are in doubt.
  for (auto it = mine.rbegin(); it != mine.rend(); ++it) {
    prefix_->Forget(*it);
    pool_->Release(*it);
  }
  s.table.Resize(0);
  integrity_->OnTruncate(seq, 0);
  for (int l = 0; l < pool_->n_layers(); ++l) {
    s.k_blocks[l].clear();
    s.v_blocks[l].clear();
    s.k_scales[l].clear();
    s.v_scales[l].clear();
  }
  s.hashes.clear();
  s.length = 0;
}

Status PagedKvCache::InjectFaultForTesting(KvFault kind, int32_t seq, int32_t other) {
  Sequence& s = seqs_[CheckedSeq(seq)];
  const int32_t i = LastPrivateEntry(s.table, *pool_);
  if (i < 0) return FailedPrecondition("sequence " + std::to_string(seq) + " holds no private block");
  const kv::BlockId b = s.table[i];
  switch (kind) {
    case KvFault::kReuse: {
      // A double release: the block goes back to the free list while the
      // sequence still lists it, and the pool hands it out again at once
      // (most recently freed first) to a holder outside any table.
      prefix_->Forget(b);
      pool_->Release(b);
      const kv::BlockId again = pool_->Allocate();
      PAGODA_CHECK(again == b) << "the free list did not hand the released block out first";
      testing_strays_.push_back(again);
      return Status::Ok();
    }
    case KvFault::kRetag:
      pool_->RetagForTesting(b);
      return Status::Ok();
    case KvFault::kSwap: {
      Sequence& o = seqs_[CheckedSeq(other)];
      const int32_t j = LastPrivateEntry(o.table, *pool_);
      if (j < 0 || other == seq) {
        return FailedPrecondition("sequence " + std::to_string(other) + " holds no private block to swap");
      }
      const kv::BlockId c = o.table[j];
      SetEntry(s, i, c, pool_->integrity_tag(c));
      SetEntry(o, j, b, pool_->integrity_tag(b));
      return Status::Ok();
    }
  }
  return InvalidArgument("unknown KV fault");
}

}  // namespace pagoda
