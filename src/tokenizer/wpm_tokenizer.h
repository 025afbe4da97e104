// WpmTokenizer: BERT WordPiece (tokenizer.ggml.model = "bert"), matching
// Hugging Face's BertTokenizer (fast): BertNormalizer (clean text, pad CJK
// ideographs with spaces, strip accents, lowercase), BertPreTokenizer (split
// on whitespace and around each punctuation character), then WordPiece,
// greedy longest-match-first per word, [UNK] for a word that cannot be
// covered or is longer than 100 characters.
//
// llama.cpp's converter rewrites the Hugging Face vocabulary: a word-start
// token "foo" is stored as "\u2581foo" and a continuation "##foo" as "foo"
// ("[...]" tokens stay as they are). So the first piece of a word is looked
// up with U+2581 in front and the rest as they are.
//
// Immutable after construction; Encode may run on many threads at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda {

class WpmTokenizer {
 public:
  explicit WpmTokenizer(const Vocab& vocab);

  // Appends the tokens of raw text (normalization included).
  void Encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) const;

 private:
  // Appends the pieces of one pre-tokenized word, or UNK.
  void EncodeWord(const Vocab& vocab, std::string_view word, std::string* scratch,
                  std::vector<TokenId>* out) const;
  TokenId FindPiece(const Vocab& vocab, std::string_view text) const;

  std::vector<bool> matchable_;  // by id: normal, user-defined or undefined
  size_t max_piece_bytes_ = 0;   // longest matchable text, U+2581 included
};

// The BertNormalizer of Hugging Face tokenizers with lowercase = true (and so
// strip_accents = true), in its order: drop U+0000, U+FFFD and category C*
// except \t \n \r; White_Space -> ' '; CJK ideographs get a space on each
// side; NFD, then drop category Mn; lowercase. Any bytes are accepted:
// invalid bytes are copied unchanged. Exposed for tests.
void AppendBertNormalized(std::string_view text, std::string* out);

// BertPreTokenizer over normalized text: words split at ' ' (dropped) and
// around each punctuation character (kept as a word of its own): ASCII
// 33-47, 58-64, 91-96, 123-126 and Unicode category P*. An invalid byte is
// an ordinary word character. Exposed for tests.
void SplitBertWords(std::string_view normalized, std::vector<std::string_view>* words);

}  // namespace pagoda
