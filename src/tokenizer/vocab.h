// Vocab: the token table shared by every tokenizer kind, read from GGUF
// tokenizer.ggml.* metadata: texts, scores, types, special ids, BOS/EOS
// policy and the end-of-generation set. Immutable after Load(); owned by
// Tokenizer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"

namespace pagoda {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

enum class TokenAttr : int32_t {  // tokenizer.ggml.token_type
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

enum class TokenizerKind { kSpm, kBpe, kWpm };

// Transparent hash so lookups by string_view do not allocate.
struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, TokenId, StringViewHash, std::equal_to<>>;

struct Vocab {
  // Reads the common keys. `kind` picks the llama.cpp defaults (SPM: BOS 1,
  // EOS 2, UNK 0, add BOS, space prefix; BPE: none of these, except that
  // `bpe_add_bos` says whether the pre-tokenizer family adds BOS by default;
  // WordPiece: BOS = [CLS] 101, UNK 100, SEP 102, PAD 0, add BOS and SEP, no
  // EOS; tokenizer.ggml.cls_token_id, written by older converters, stands in
  // for a missing bos_token_id). The add_*_token / add_space_prefix keys
  // override. Errors name the key.
  static Result<Vocab> Load(const GgufMetadata& md, TokenizerKind kind, bool bpe_add_bos = false);

  int32_t size() const { return static_cast<int32_t>(texts.size()); }
  bool InRange(TokenId id) const { return id >= 0 && id < size(); }
  // First id whose text is `text`, or kNoToken.
  TokenId Find(std::string_view text) const {
    auto it = index.find(text);
    return it == index.end() ? kNoToken : it->second;
  }
  bool IsEog(TokenId id) const { return eog.count(id) != 0; }

  std::vector<std::string> texts;
  std::vector<float> scores;  // 0 when the file has none
  std::vector<TokenAttr> attrs;
  TokenIndex index;

  TokenId bos = kNoToken, eos = kNoToken, unk = kNoToken, eot = kNoToken, eom = kNoToken;
  TokenId sep = kNoToken, pad = kNoToken;
  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;  // append `sep` after EOS (BERT's [SEP])
  bool add_space_prefix = false;
  std::unordered_set<TokenId> eog;
};

// Key names, for callers that build metadata and for error messages.
inline constexpr const char* kKeyModel = "tokenizer.ggml.model";
inline constexpr const char* kKeyPre = "tokenizer.ggml.pre";
inline constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
inline constexpr const char* kKeyScores = "tokenizer.ggml.scores";
inline constexpr const char* kKeyTokenType = "tokenizer.ggml.token_type";
inline constexpr const char* kKeyMerges = "tokenizer.ggml.merges";

}  // namespace pagoda
