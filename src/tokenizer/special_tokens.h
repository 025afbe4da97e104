// SpecialTokenMatcher: finds control / user-defined / unknown token texts in
// raw input and cuts the input into text fragments and special-token ids.
// Matching is leftmost-longest over a byte trie (what Hugging Face's added
// vocabulary does). User-defined tokens always match; control and unknown
// tokens only with parse_special (llama.cpp's rule). Immutable after Build().
#pragma once

#include <bitset>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda {

struct Fragment {
  std::string_view text;     // raw text when token == kNoToken
  TokenId token = kNoToken;  // a special token otherwise
};

class SpecialTokenMatcher {
 public:
  void Build(const Vocab& vocab);
  // Appends the fragments of `text` to `out`; text fragments are never empty.
  void Split(std::string_view text, bool parse_special, std::vector<Fragment>* out) const;
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    TokenId token = kNoToken;
    bool always = false;  // matches without parse_special (user-defined)
  };
  int32_t Child(int32_t node, uint8_t b) const;
  // Longest special token starting at text[pos]: its length, or 0.
  size_t MatchAt(std::string_view text, size_t pos, bool parse_special, TokenId* id) const;

  std::vector<Node> nodes_;
  std::bitset<256> first_any_;     // first bytes of any special token
  std::bitset<256> first_always_;  // first bytes of user-defined tokens
};

}  // namespace pagoda
