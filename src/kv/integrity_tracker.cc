#include "kv/integrity_tracker.h"

#include <algorithm>

namespace pagoda::kv {
namespace {

constexpr std::string_view kErrorPrefix = "KV cache integrity check failed";

// The null object: --kv-integrity off.
class NoIntegrityTracker final : public IntegrityTracker {
 public:
  IntegrityMode mode() const override { return IntegrityMode::kOff; }
  void OnAppend(int32_t, BlockId, uint32_t) override {}
  void OnReplace(int32_t, int32_t, BlockId, uint32_t) override {}
  void OnTruncate(int32_t, int32_t) override {}
  void Check(std::span<const int32_t>, std::span<const BlockTable* const>, const BlockPool&,
             std::vector<IntegrityFailure>*) const override {}
  void Releasable(int32_t, const BlockTable& table, const BlockPool&, std::vector<BlockId>* out) const override {
    out->assign(table.ids().begin(), table.ids().end());
  }
};

class CheckingIntegrityTracker final : public IntegrityTracker {
 public:
  explicit CheckingIntegrityTracker(int32_t n_seq_max) : ids_(n_seq_max), tags_(n_seq_max) {}

  IntegrityMode mode() const override { return IntegrityMode::kCheck; }

  void OnAppend(int32_t seq, BlockId b, uint32_t tag) override {
    ids_[Seq(seq)].push_back(b);
    tags_[seq].push_back(tag);
  }
  void OnReplace(int32_t seq, int32_t index, BlockId b, uint32_t tag) override {
    PAGODA_CHECK(index >= 0 && static_cast<size_t>(index) < ids_[Seq(seq)].size());
    ids_[seq][index] = b;
    tags_[seq][index] = tag;
  }
  void OnTruncate(int32_t seq, int32_t n_blocks) override {
    if (static_cast<size_t>(n_blocks) < ids_[Seq(seq)].size()) {
      ids_[seq].resize(n_blocks);
      tags_[seq].resize(n_blocks);
    }
  }

  void Check(std::span<const int32_t> seqs, std::span<const BlockTable* const> tables, const BlockPool& pool,
             std::vector<IntegrityFailure>* failures) const override {
    const std::span<const uint32_t> pool_tags = pool.integrity_tags();
    const std::span<const int32_t> pool_refs = pool.ref_counts();
    const BlockId n_blocks = pool.n_blocks();
    for (int32_t seq : seqs) {
      const std::vector<BlockId>& live = tables[Seq(seq)]->ids();
      const std::vector<BlockId>& ids = ids_[seq];
      const std::vector<uint32_t>& tags = tags_[seq];
      const size_t n = ids.size();
      if (live.size() != n) {
        IntegrityFailure f;
        f.seq = seq;
        f.recorded = static_cast<BlockId>(n);  // lengths, for Describe
        f.live = static_cast<BlockId>(live.size());
        failures->push_back(f);
        continue;
      }
      // One pass, no early exit on the good path: a branch per sequence.
      bool ok = true;
      for (size_t i = 0; i < n; ++i) {
        const BlockId b = live[i];
        const bool in_range = static_cast<uint32_t>(b) < static_cast<uint32_t>(n_blocks);
        ok &= in_range && b == ids[i] && pool_tags[in_range ? b : 0] == tags[i] && pool_refs[in_range ? b : 0] > 0;
      }
      if (!ok) failures->push_back(Describe(seq, live, pool));
    }
  }

  void Releasable(int32_t seq, const BlockTable&, const BlockPool& pool, std::vector<BlockId>* out) const override {
    out->clear();
    const std::vector<BlockId>& ids = ids_[Seq(seq)];
    for (size_t i = 0; i < ids.size(); ++i) {
      if (pool.ref_count(ids[i]) > 0 && pool.integrity_tag(ids[i]) == tags_[seq][i]) out->push_back(ids[i]);
    }
  }

 private:
  int32_t Seq(int32_t seq) const {
    PAGODA_CHECK(seq >= 0 && static_cast<size_t>(seq) < ids_.size()) << "sequence id " << seq;
    return seq;
  }
  // The first bad entry of a sequence known to be bad.
  IntegrityFailure Describe(int32_t seq, const std::vector<BlockId>& live, const BlockPool& pool) const {
    IntegrityFailure f;
    f.seq = seq;
    for (size_t i = 0; i < live.size(); ++i) {
      const BlockId b = live[i];
      const bool in_range = b >= 0 && b < pool.n_blocks();
      const uint32_t tag = in_range ? pool.integrity_tag(b) : 0;
      const int32_t ref = in_range ? pool.ref_count(b) : 0;
      if (in_range && b == ids_[seq][i] && tag == tags_[seq][i] && ref > 0) continue;
      f.index = static_cast<int32_t>(i);
      f.recorded = ids_[seq][i];
      f.recorded_tag = tags_[seq][i];
      f.live = b;
      f.live_tag = tag;
      f.live_ref_count = ref;
      break;
    }
    return f;
  }

  // Per sequence id: the blocks it was given and their tags then, in table order.
  std::vector<std::vector<BlockId>> ids_;
  std::vector<std::vector<uint32_t>> tags_;
};

}  // namespace

std::optional<IntegrityMode> ParseIntegrityMode(std::string_view s) {
  if (s == "off") return IntegrityMode::kOff;
  if (s == "check") return IntegrityMode::kCheck;
  return std::nullopt;
}

const char* IntegrityModeName(IntegrityMode m) { return m == IntegrityMode::kOff ? "off" : "check"; }

std::string IntegrityFailure::Describe() const {
  std::string s = "sequence " + std::to_string(seq);
  if (index < 0) {
    return s + ": block table has " + std::to_string(live) + " entries, " + std::to_string(recorded) +
           " blocks were given";
  }
  return s + ", table entry " + std::to_string(index) + ": given block " + std::to_string(recorded) + " tag " +
         std::to_string(recorded_tag) + ", table has block " + std::to_string(live) + " (tag " +
         std::to_string(live_tag) + ", ref_count " + std::to_string(live_ref_count) + ")";
}

std::unique_ptr<IntegrityTracker> MakeIntegrityTracker(IntegrityMode mode, int32_t n_seq_max) {
  if (mode == IntegrityMode::kOff) return std::make_unique<NoIntegrityTracker>();
  return std::make_unique<CheckingIntegrityTracker>(n_seq_max);
}

Status IntegrityError(const IntegrityFailure& failure) {
  return DataLoss(std::string(kErrorPrefix) + " (" +
                  (failure.index < 0 ? std::string("block table length changed")
                                     : "block table entry " + std::to_string(failure.index)) +
                  "): the request's KV cache pages were changed under it, so it was stopped");
}

bool IsIntegrityError(const Status& status) {
  return status.code() == StatusCode::kDataLoss && status.message().starts_with(kErrorPrefix);
}

}  // namespace pagoda::kv
