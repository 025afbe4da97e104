// SpmTokenizer: SentencePiece-style BPE over a scored vocabulary
// (tokenizer.ggml.model = "llama"), as llama.cpp's llm_tokenizer_spm does it:
// the text (spaces already escaped to U+2581 by the caller) is split into
// UTF-8 characters, then the adjacent pair whose concatenation is the
// highest-scoring token is merged (ties: leftmost) until none is left.
// Pieces that are not tokens fall back to <0xNN> byte tokens, then to UNK.
// Control, unknown, unused and byte tokens are never produced by merging.
// Immutable after construction; Encode may run on many threads at once.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda {

class SpmTokenizer {
 public:
  explicit SpmTokenizer(const Vocab& vocab);

  // Appends the tokens of already-escaped text.
  void Encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) const;

  // Token for a raw byte: <0xNN>, else the one-byte text, else UNK (or none).
  TokenId ByteToken(uint8_t b) const { return byte_tokens_[b]; }

 private:
  // Id of a token that merging may produce, or kNoToken.
  TokenId FindMergeable(const Vocab& vocab, std::string_view text) const;

  std::vector<bool> mergeable_;  // by id
  std::array<TokenId, 256> byte_tokens_{};
};

}  // namespace pagoda
