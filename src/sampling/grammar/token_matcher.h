// Token-level grammar enforcement.
//
// TokenVocabIndex: built once per tokenizer (immutable, shared between
// threads and requests as shared_ptr<const>): every token's output bytes
// (byte-level BPE decoded, SPM U+2581 read as a space, <0xNN> byte-fallback
// tokens as their byte), its class, and a byte trie over the text tokens
// in sorted order, so a walk shares the work of common prefixes and skips a
// whole subtree at the first rejected byte. Control, unknown and unused
// tokens are never allowed by a grammar; end-of-generation tokens are
// allowed exactly when the matcher is accepting.
//
// TokenMatcher: one per constrained sequence (engine thread only). Its mask
// comes from a cache shared by every sequence of the same (grammar, vocab):
// an entry is keyed by the matcher's heads with their stacks cut to the top
// kMaskCacheDepth frames, and holds the tokens accepted inside that window
// plus the few tokens whose fate depends on the frames below the cut (checked
// per step against the real stacks). See docs/GRAMMAR.md for the design and
// the budget-aware mode.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "sampling/grammar/grammar.h"
#include "sampling/grammar/matcher.h"
#include "sampling/grammar/token_bitmask.h"

namespace pagoda {
class Tokenizer;
}

namespace pagoda::grammar {

class MaskCache;
struct MaskEntry;
class MaskWalker;

enum class TokenClass : uint8_t {
  kText,   // its bytes are matched against the grammar
  kEog,    // end of generation: allowed when the matcher is accepting
  kNever,  // control / unknown / unused / empty: never allowed
};

class TokenVocabIndex {
 public:
  struct Entry {
    std::string bytes;     // grammar bytes (kText), else ""
    TokenClass cls = TokenClass::kNever;
    std::string rendered;  // the token's text with specials shown (for delay_until matching)
  };

  // From a tokenizer (ids beyond its vocabulary are never allowed).
  static std::shared_ptr<const TokenVocabIndex> Build(const Tokenizer& tokenizer);
  // From explicit entries (tests, synthetic vocabularies).
  static std::shared_ptr<const TokenVocabIndex> FromEntries(std::vector<Entry> entries);

  int32_t vocab_size() const { return static_cast<int32_t>(cls_.size()); }
  TokenClass token_class(TokenId id) const { return cls_[static_cast<size_t>(id)]; }
  std::string_view bytes(TokenId id) const {
    return {blob_.data() + off_[static_cast<size_t>(id)], static_cast<size_t>(off_[id + 1] - off_[id])};
  }
  std::string_view rendered(TokenId id) const { return rendered_[static_cast<size_t>(id)]; }
  const std::vector<TokenId>& eog_tokens() const { return eog_; }
  int32_t max_token_bytes() const { return max_len_; }

  // Trie over the text tokens, nodes in depth-first order (node 0 = root,
  // no byte). A node's subtree is [i, subtree_end).
  struct TrieNode {
    uint8_t byte;
    uint16_t depth;          // bytes from the root
    int32_t subtree_end;
    int32_t tokens_begin;    // into trie_tokens(): tokens whose bytes end at this node
    int32_t tokens_end;
  };
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<TokenId>& trie_tokens() const { return trie_tokens_; }

  // The mask cache of (grammar, this vocabulary), created on first use and
  // dropped with the grammar. Thread-safe.
  std::shared_ptr<MaskCache> CacheFor(const std::shared_ptr<const Grammar>& grammar) const;

 private:
  TokenVocabIndex() = default;
  void BuildTrie();

  std::vector<TokenClass> cls_;
  std::vector<int64_t> off_;  // [n + 1] into blob_
  std::string blob_;
  std::vector<std::string> rendered_;
  std::vector<TokenId> eog_;
  int32_t max_len_ = 0;
  std::vector<TrieNode> trie_;
  std::vector<TokenId> trie_tokens_;

  struct CacheSlot {
    std::weak_ptr<const Grammar> grammar;
    std::shared_ptr<MaskCache> cache;
  };
  mutable std::mutex mu_;
  mutable std::unordered_map<const Grammar*, CacheSlot> caches_;
};

class TokenMatcher {
 public:
  TokenMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabIndex> vocab);
  ~TokenMatcher();
  TokenMatcher(const TokenMatcher&);
  TokenMatcher& operator=(const TokenMatcher&);
  TokenMatcher(TokenMatcher&&) noexcept;
  TokenMatcher& operator=(TokenMatcher&&) noexcept;

  // The tokens AcceptToken would take now; `mask` is resized to the
  // vocabulary. Returns how many are allowed (0: nothing can follow).
  int32_t ComputeMask(TokenBitmask& mask);
  // Budget-aware: with `remaining_tokens` left (this one included), also
  // drops the tokens after which MinBytesToAccept() > remaining_tokens - 1,
  // so that an accepting state stays reachable within the budget (one byte
  // per token, as byte tokens allow). Cheap unless the budget is tight.
  int32_t ComputeMask(TokenBitmask& mask, int32_t remaining_tokens);

  // Advances by one token if it is allowed (an EOG token when accepting
  // finishes the matcher); false and no change otherwise.
  bool AcceptToken(TokenId id);

  // An EOG token was accepted, or the grammar is complete and nothing may follow.
  bool IsFinished() const { return finished_ || (matcher_.IsAccepting() && !matcher_.CanContinue()); }
  bool IsAccepting() const { return matcher_.IsAccepting(); }
  int32_t MinBytesToAccept() const { return matcher_.MinBytesToAccept(); }
  const GrammarMatcher& matcher() const { return matcher_; }
  const TokenVocabIndex& vocab() const { return *vocab_; }

 private:
  // The cache key of the current heads; *cut_tail: the largest fewest-bytes
  // contribution of the frames cut off below the key (0 if none).
  // (depth: frames kept per head; the key's first byte.)
  std::string CacheKey(int32_t depth, int32_t* cut_tail) const;
  std::shared_ptr<const MaskEntry> FindOrWalk(int32_t depth, const std::string& key);
  std::shared_ptr<const MaskEntry> Derive(const MaskEntry& base, const std::string& key);

  GrammarMatcher matcher_;
  std::shared_ptr<const TokenVocabIndex> vocab_;
  std::shared_ptr<MaskCache> cache_;
  bool finished_ = false;
  std::unique_ptr<MaskWalker> walker_;  // scratch
};

}  // namespace pagoda::grammar
