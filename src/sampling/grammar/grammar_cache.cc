#include "sampling/grammar/grammar_cache.h"

namespace pagoda::grammar {

Result<std::shared_ptr<const Grammar>> GrammarCache::GetOrCompile(std::string_view text, std::string_view root) {
  std::string key;
  key.reserve(root.size() + 1 + text.size());
  key.append(root).push_back('\0');
  key.append(text);
  {
    std::lock_guard lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
    ++misses_;
  }
  // Compile outside the lock; two threads may compile the same text at once,
  // and the second insert just refreshes the entry.
  PAGODA_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> g, CompileGbnf(text, root));
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(key, g);
  index_.emplace(std::move(key), lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return g;
}

GrammarCache::Stats GrammarCache::stats() const {
  std::lock_guard lock(mu_);
  return {hits_, misses_, lru_.size()};
}

}  // namespace pagoda::grammar
