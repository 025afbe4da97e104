// Tokenizer: text <-> token ids, built from GGUF tokenizer metadata
// (tokenizer.ggml.*). Immutable after construction and safe to share between
// threads. See spm_tokenizer / bpe_tokenizer for the algorithms.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"

namespace pagoda {

using TokenId = int32_t;

enum class TokenAttr : int32_t {  // tokenizer.ggml.token_type
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

class Tokenizer {
 public:
  // Errors name the missing or malformed key.
  static Result<std::unique_ptr<Tokenizer>> FromMetadata(const GgufMetadata& md);
  virtual ~Tokenizer() = default;

  // add_special: add BOS/EOS as the model's add_bos_token / add_eos_token say.
  // parse_special: text matching control / user-defined token strings becomes that token.
  virtual std::vector<TokenId> Encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // The bytes this token contributes to output text (may be a partial UTF-8
  // sequence). Control tokens give "" unless `special` is true.
  virtual std::string TokenToPiece(TokenId id, bool special) const = 0;

  // Concatenated pieces; SPM's leading space after BOS is removed as llama.cpp does.
  std::string Decode(const std::vector<TokenId>& ids, bool special = false) const;

  int32_t vocab_size() const;
  TokenId bos() const;   // -1 if none
  TokenId eos() const;   // -1 if none
  bool add_bos() const;
  bool add_eos() const;
  // End-of-generation tokens (eos, eot, eom...).
  bool IsEog(TokenId id) const;
  TokenAttr attr(TokenId id) const;
  const std::string& token_text(TokenId id) const;  // raw vocab string
};

// Turns a stream of tokens into valid UTF-8 text, holding back an incomplete
// multi-byte sequence until the token that completes it arrives.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tok, bool special = false);
  std::string Push(TokenId id);
  std::string Flush();  // whatever is still held (invalid bytes become U+FFFD)
};

}  // namespace pagoda
