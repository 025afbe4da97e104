#include "kv/memory_tier.h"

#include <chrono>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

namespace pagoda::kv {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxRemovedBacklog = size_t{1} << 16;

using Record = std::shared_ptr<const std::vector<uint8_t>>;

}  // namespace

struct MemoryTier::Impl {
  MemoryTierOptions options;
  mutable std::mutex mu;
  struct Entry {
    BlockHash hash;
    Record record;
  };
  std::list<Entry> lru;  // least recently used first
  std::unordered_map<BlockHash, std::list<Entry>::iterator, BlockHashHasher> index;
  std::vector<BlockHash> removed;
  KvTierStats stats;

  void EraseLocked(std::list<Entry>::iterator it, bool report) {
    stats.blocks -= 1;
    stats.bytes -= static_cast<int64_t>(it->record->size());
    if (report && removed.size() < kMaxRemovedBacklog) removed.push_back(it->hash);
    index.erase(it->hash);
    lru.erase(it);
  }

  void KeepLocked(const BlockHash& hash, Record record) {
    if (auto it = index.find(hash); it != index.end()) EraseLocked(it->second, /*report=*/false);
    const auto size = static_cast<int64_t>(record->size());
    while (!lru.empty() && stats.bytes + size > options.max_bytes) {
      EraseLocked(lru.begin(), /*report=*/true);
      ++stats.deleted;
    }
    lru.push_back(Entry{hash, std::move(record)});
    index[hash] = std::prev(lru.end());
    stats.blocks += 1;
    stats.bytes += size;
    stats.writes += 1;
    stats.write_bytes += size;
  }
};

MemoryTier::MemoryTier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MemoryTier::~MemoryTier() = default;

Result<std::unique_ptr<MemoryTier>> MemoryTier::Open(const MemoryTierOptions& options) {
  if (!TierLayoutValid(options.layout)) return InvalidArgument("KV memory tier: invalid block layout");
  if (options.max_bytes < options.layout.RecordBytes()) {
    return InvalidArgument("KV memory tier: " + std::to_string(options.max_bytes) + " bytes hold no block record of " +
                           std::to_string(options.layout.RecordBytes()) + " bytes");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  return std::unique_ptr<MemoryTier>(new MemoryTier(std::move(impl)));
}

const BlockLayout& MemoryTier::layout() const { return impl_->options.layout; }

bool MemoryTier::Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
                     const void* payload) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->index.contains(hash)) {
      ++impl_->stats.dropped;
      return false;
    }
  }
  const auto start = Clock::now();
  auto rec = std::make_shared<std::vector<uint8_t>>();
  rec->reserve(static_cast<size_t>(impl_->options.layout.RecordBytes()));
  EncodeBlock(impl_->options.layout, hash, parent, tokens, payload, rec.get());
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stats.write_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  impl_->KeepLocked(hash, std::move(rec));
  return true;
}

Status MemoryTier::Insert(std::vector<uint8_t>&& record) {
  // Verified before it is kept: the header names this layout, the checksum holds.
  if (static_cast<int64_t>(record.size()) != impl_->options.layout.RecordBytes()) {
    return InvalidArgument("KV memory tier: a record of " + std::to_string(record.size()) + " bytes, expected " +
                           std::to_string(impl_->options.layout.RecordBytes()));
  }
  PAGODA_ASSIGN_OR_RETURN(const BlockRecord header, VerifyBlock(impl_->options.layout, record));
  auto rec = std::make_shared<const std::vector<uint8_t>>(std::move(record));
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->KeepLocked(header.hash, std::move(rec));
  return Status::Ok();
}

bool MemoryTier::Contains(const BlockHash& hash) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->index.contains(hash);
}

Result<BlockRecord> MemoryTier::Get(const BlockHash& hash, void* payload) {
  const auto start = Clock::now();
  Record rec;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->index.find(hash);
    if (it == impl_->index.end()) {
      ++impl_->stats.misses;
      return NotFound("KV memory tier: block not held");
    }
    impl_->lru.splice(impl_->lru.end(), impl_->lru, it->second);  // most recently used now
    rec = it->second->record;
  }
  Result<BlockRecord> r = DecodeBlock(impl_->options.layout, *rec, payload);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!r.ok() || r.value().hash != hash) {
    ++impl_->stats.corrupt;
    if (auto it = impl_->index.find(hash); it != impl_->index.end() && it->second->record == rec) {
      impl_->EraseLocked(it->second, /*report=*/true);
    }
    if (r.ok()) return DataLoss("KV memory tier: the record under a hash names another block");
    return r;
  }
  ++impl_->stats.hits;
  impl_->stats.read_bytes += static_cast<int64_t>(rec->size());
  impl_->stats.read_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

KvTierStats MemoryTier::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

void MemoryTier::TakeRemoved(std::vector<BlockHash>* out) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  out->insert(out->end(), impl_->removed.begin(), impl_->removed.end());
  impl_->removed.clear();
}

}  // namespace pagoda::kv
