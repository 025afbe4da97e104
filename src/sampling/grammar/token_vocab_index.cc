#include <algorithm>
#include <numeric>

#include "sampling/grammar/mask_cache.h"
#include "sampling/grammar/token_matcher.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::grammar {

std::shared_ptr<const TokenVocabIndex> TokenVocabIndex::Build(const Tokenizer& tokenizer) {
  std::vector<Entry> entries(static_cast<size_t>(tokenizer.vocab_size()));
  for (TokenId id = 0; id < tokenizer.vocab_size(); ++id) {
    Entry& e = entries[static_cast<size_t>(id)];
    e.rendered = std::string(tokenizer.PieceView(id, true));
    const TokenAttr attr = tokenizer.attr(id);
    if (tokenizer.IsEog(id)) {
      e.cls = TokenClass::kEog;
    } else if (attr == TokenAttr::kControl || attr == TokenAttr::kUnknown || attr == TokenAttr::kUnused) {
      e.cls = TokenClass::kNever;
    } else {
      e.bytes = std::string(tokenizer.PieceView(id, false));
      e.cls = e.bytes.empty() ? TokenClass::kNever : TokenClass::kText;
    }
  }
  return FromEntries(std::move(entries));
}

std::shared_ptr<const TokenVocabIndex> TokenVocabIndex::FromEntries(std::vector<Entry> entries) {
  auto idx = std::shared_ptr<TokenVocabIndex>(new TokenVocabIndex());
  const size_t n = entries.size();
  idx->cls_.resize(n);
  idx->off_.resize(n + 1);
  idx->rendered_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Entry& e = entries[i];
    if (e.cls == TokenClass::kText && e.bytes.empty()) e.cls = TokenClass::kNever;
    idx->cls_[i] = e.cls;
    idx->off_[i] = static_cast<int64_t>(idx->blob_.size());
    if (e.cls == TokenClass::kText) {
      idx->blob_ += e.bytes;
      idx->max_len_ = std::max(idx->max_len_, static_cast<int32_t>(e.bytes.size()));
    }
    if (e.cls == TokenClass::kEog) idx->eog_.push_back(static_cast<TokenId>(i));
    idx->rendered_[i] = std::move(e.rendered);
  }
  idx->off_[n] = static_cast<int64_t>(idx->blob_.size());
  idx->BuildTrie();
  return idx;
}

void TokenVocabIndex::BuildTrie() {
  std::vector<TokenId> ids;
  for (TokenId i = 0; i < vocab_size(); ++i) {
    if (cls_[static_cast<size_t>(i)] == TokenClass::kText) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end(), [&](TokenId a, TokenId b) {
    const std::string_view x = bytes(a), y = bytes(b);
    return x != y ? x < y : a < b;
  });
  trie_.clear();
  trie_tokens_.clear();
  trie_.push_back({0, 0, 0, 0, 0});
  std::vector<int32_t> path{0};  // node per depth
  std::string_view prev;
  for (TokenId id : ids) {
    const std::string_view s = bytes(id);
    size_t lcp = 0;
    while (lcp < s.size() && lcp < prev.size() && s[lcp] == prev[lcp]) ++lcp;
    while (path.size() > lcp + 1) {
      trie_[static_cast<size_t>(path.back())].subtree_end = static_cast<int32_t>(trie_.size());
      path.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      const int32_t tb = static_cast<int32_t>(trie_tokens_.size());
      trie_.push_back({static_cast<uint8_t>(s[d]), static_cast<uint16_t>(std::min<size_t>(d + 1, 65535)), 0, tb, tb});
      path.push_back(static_cast<int32_t>(trie_.size()) - 1);
    }
    TrieNode& leaf = trie_[static_cast<size_t>(path.back())];
    PAGODA_CHECK(leaf.tokens_end == static_cast<int32_t>(trie_tokens_.size()));
    trie_tokens_.push_back(id);
    ++leaf.tokens_end;
    prev = s;
  }
  while (!path.empty()) {
    trie_[static_cast<size_t>(path.back())].subtree_end = static_cast<int32_t>(trie_.size());
    path.pop_back();
  }
}

std::shared_ptr<MaskCache> TokenVocabIndex::CacheFor(const std::shared_ptr<const Grammar>& grammar) const {
  std::lock_guard lock(mu_);
  for (auto it = caches_.begin(); it != caches_.end();) {
    it = it->second.grammar.expired() ? caches_.erase(it) : std::next(it);
  }
  CacheSlot& slot = caches_[grammar.get()];
  if (slot.cache == nullptr || slot.grammar.lock() != grammar) {
    slot.grammar = grammar;
    slot.cache = std::make_shared<MaskCache>();
  }
  return slot.cache;
}

}  // namespace pagoda::grammar
