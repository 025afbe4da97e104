// GrammarCache: compiled grammars by (text, root), a bounded LRU, so a
// schema or grammar that repeats across requests compiles once. Thread-safe
// (HTTP threads share one). Failed compilations are not cached.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"
#include "sampling/grammar/grammar.h"

namespace pagoda::grammar {

class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 256) : capacity_(capacity == 0 ? 1 : capacity) {}

  // The cached grammar, or CompileGbnf's result (cached when it succeeds).
  Result<std::shared_ptr<const Grammar>> GetOrCompile(std::string_view text, std::string_view root = "root");

  struct Stats {
    int64_t hits = 0;
    int64_t misses = 0;
    size_t size = 0;
  };
  Stats stats() const;

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const Grammar>>>;
  const size_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;  // most recent first
  std::unordered_map<std::string, Lru::iterator> index_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

}  // namespace pagoda::grammar
