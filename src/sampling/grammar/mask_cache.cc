#include "sampling/grammar/mask_cache.h"

namespace pagoda::grammar {

std::shared_ptr<const MaskEntry> MaskCache::Find(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return it->second;
}

void MaskCache::Insert(std::string key, std::shared_ptr<const MaskEntry> entry) {
  const int64_t b = entry->bytes() + static_cast<int64_t>(key.size());
  std::lock_guard lock(mu_);
  if (bytes_ + b > kMaskCacheMaxBytes) {
    map_.clear();  // entries in use stay alive through their shared_ptr
    bytes_ = 0;
  }
  if (map_.emplace(std::move(key), std::move(entry)).second) bytes_ += b;
}

MaskCache::Stats MaskCache::stats() const {
  std::lock_guard lock(mu_);
  return {hits_, misses_, static_cast<int64_t>(map_.size()), bytes_};
}

}  // namespace pagoda::grammar
