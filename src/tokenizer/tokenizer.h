// Tokenizer: text <-> token ids, built from GGUF tokenizer metadata
// (tokenizer.ggml.*). Supports SentencePiece-style vocabularies ("llama"),
// byte-level BPE ("gpt2") with the pre-tokenizers llama.cpp knows and BERT
// WordPiece ("bert"); others are reported as Unimplemented. Text between
// special tokens is normalized first when the metadata asks for it (NFC; see
// normalizer.h; WordPiece always applies BERT's own normalizer). Immutable
// after construction and safe to share between threads. The algorithms live
// in spm_tokenizer / bpe_tokenizer / wpm_tokenizer; special-token splitting
// in special_tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace pagoda {

class SpmTokenizer;
class BpeTokenizer;
class WpmTokenizer;

class Tokenizer {
 public:
  // Errors name the missing or malformed key.
  static Result<std::unique_ptr<Tokenizer>> FromMetadata(const GgufMetadata& md);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: add BOS/EOS/SEP as the model's add_bos_token / add_eos_token
  // / add_sep_token say (WordPiece: [CLS] ... [SEP]). WordPiece is lossy
  // (lowercase, accents stripped, [UNK] for unknown words).
  // parse_special: text matching control / unknown token strings becomes that
  // token. User-defined (added) tokens are always matched, with or without it,
  // as Hugging Face and llama.cpp do. With NFC normalization, the text between
  // special tokens is normalized (special tokens are matched on the raw text).
  // Any bytes are accepted; invalid UTF-8 is encoded byte by byte.
  std::vector<TokenId> Encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes this token contributes to output text (may be a partial UTF-8
  // sequence). Control and unknown tokens give "" unless `special` is true;
  // ids out of range give "". SPM normal and user-defined tokens read U+2581
  // back as a space, as SentencePiece does; so do WordPiece word-start tokens
  // ("\u2581word" -> " word"; continuations have no mark).
  std::string TokenToPiece(TokenId id, bool special) const {
    return std::string(PieceView(id, special));
  }
  std::string_view PieceView(TokenId id, bool special) const;

  // Concatenated pieces (raw bytes, not sanitized). With a space-prefix (SPM)
  // vocabulary, one leading space is removed from the first token after an
  // optional leading BOS, so Decode(Encode(text, ...)) == text (for text that
  // normalization leaves alone and, with SPM, that has no literal U+2581).
  // WordPiece, as Hugging Face decodes: the space before the first word goes,
  // special tokens (with `special`) stand as words of their own, and spaces
  // are cleaned up as clean_up_tokenization does (" ," -> ",", " 's" -> "'s",
  // ...): "hello, world!", not "hello , world !".
  std::string Decode(std::span<const TokenId> ids, bool special = false) const;
  std::string Decode(const std::vector<TokenId>& ids, bool special = false) const {
    return Decode(std::span<const TokenId>(ids), special);
  }

  int32_t vocab_size() const { return vocab_.size(); }
  TokenId bos() const { return vocab_.bos; }  // kNoToken (-1) if none
  TokenId eos() const { return vocab_.eos; }
  TokenId unk() const { return vocab_.unk; }
  TokenId eot() const { return vocab_.eot; }
  TokenId pad() const { return vocab_.pad; }
  TokenId sep() const { return vocab_.sep; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  bool add_sep() const { return vocab_.add_sep; }
  bool add_space_prefix() const { return vocab_.add_space_prefix; }
  // End-of-generation tokens (eos, eot, eom, <|im_end|>, <end_of_turn>...).
  bool IsEog(TokenId id) const { return vocab_.IsEog(id); }
  TokenAttr attr(TokenId id) const {
    return vocab_.InRange(id) ? vocab_.attrs[id] : TokenAttr::kUndefined;
  }
  const std::string& token_text(TokenId id) const;  // raw vocab string; "" out of range
  float token_score(TokenId id) const { return vocab_.InRange(id) ? vocab_.scores[id] : 0.0f; }
  // Id whose raw vocab text is exactly `text` (e.g. "<|im_end|>"), or kNoToken.
  TokenId FindToken(std::string_view text) const { return vocab_.Find(text); }
  TokenizerKind kind() const { return kind_; }
  const std::string& pre() const { return pre_; }  // tokenizer.ggml.pre ("" for SPM, WordPiece)
  Normalization normalization() const { return normalization_; }

 private:
  Tokenizer();
  void EncodeText(std::string_view text, bool after_special, std::vector<TokenId>* out) const;
  void BuildPieces();
  std::string DecodeWordPiece(std::span<const TokenId> ids, bool special) const;

  TokenizerKind kind_ = TokenizerKind::kSpm;
  std::string pre_;
  Normalization normalization_ = Normalization::kNone;
  Vocab vocab_;
  SpecialTokenMatcher specials_;
  std::unique_ptr<SpmTokenizer> spm_;
  std::unique_ptr<BpeTokenizer> bpe_;
  std::unique_ptr<WpmTokenizer> wpm_;
  std::vector<std::string> pieces_;  // rendering of every token with special = true
};

// Turns a stream of tokens into valid UTF-8 text, holding back an incomplete
// multi-byte sequence until the token that completes it arrives. Bytes that
// can never become valid are emitted as U+FFFD. Not thread-safe; one per
// sequence. The tokenizer must outlive it.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tok, bool special = false)
      : tok_(&tok), special_(special) {}
  std::string Push(TokenId id);
  std::string Flush();  // whatever is still held (invalid bytes become U+FFFD)
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tok_;
  bool special_;
  std::string pending_;
};

}  // namespace pagoda
