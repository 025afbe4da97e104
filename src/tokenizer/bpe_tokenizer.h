// BpeTokenizer: byte-level BPE (tokenizer.ggml.model = "gpt2"). Text is split
// into words by the PreTokenizer, each word's bytes are mapped through the
// GPT-2 byte-to-unicode table, and adjacent symbols are merged lowest rank
// first (ties: leftmost) until no merge applies. Merges are keyed on token-id
// pairs, so a merge lookup is one hash probe with no string building.
// Immutable after Create(); Encode may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace pagoda {

class BpeTokenizer {
 public:
  // Reads tokenizer.ggml.merges; malformed entries are an error naming the
  // key and index. Merges whose parts or result are not tokens are skipped
  // (they could never apply).
  static Result<std::unique_ptr<BpeTokenizer>> Create(const Vocab& vocab, const GgufMetadata& md,
                                                      std::unique_ptr<PreTokenizer> pre);

  // Appends the tokens of raw (not yet byte-mapped) text.
  void Encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) const;

  const PreTokenizer& pre() const { return *pre_; }
  size_t n_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    TokenId result;
  };
  static uint64_t PairKey(TokenId a, TokenId b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const Merge* FindMerge(TokenId a, TokenId b) const;
  void EncodeWord(const Vocab& vocab, std::string_view word, std::vector<TokenId>* out) const;

  std::unique_ptr<PreTokenizer> pre_;
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace pagoda
