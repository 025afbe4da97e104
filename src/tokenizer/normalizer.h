// Text normalization applied before tokenizing, as a Hugging Face
// tokenizer.json "normalizer" does. Only Unicode NFC is supported (Qwen's
// tokenizers use it); the choice comes from GGUF metadata, see
// ReadNormalization and docs/TOKENIZERS.md. Stateless free functions, safe on
// any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "gguf/gguf_metadata.h"

namespace pagoda {

enum class Normalization { kNone, kNfc };

// Pagoda's own key (llama.cpp has no equivalent): "nfc" or "none". Written by
// ImportHfTokenizer. When absent, NFC is assumed for tokenizer.ggml.pre =
// "qwen2" (GGUFs converted by llama.cpp lack the key, and every Hugging Face
// Qwen tokenizer normalizes to NFC) and nothing otherwise.
inline constexpr const char* kKeyNormalizer = "tokenizer.pagoda.normalizer";

// Reads kKeyNormalizer; `pre` is tokenizer.ggml.pre ("" for SPM). An unknown
// value is an error naming the key.
Result<Normalization> ReadNormalization(const GgufMetadata& md, std::string_view pre);

// Appends the NFC form of `text`. Any bytes are accepted: each maximal run of
// valid UTF-8 is normalized on its own and invalid bytes are copied as they
// are, so nothing is lost and nothing composes across an invalid byte.
void AppendNfc(std::string_view text, std::string* out);

// True when `text` could change under NFC. False guarantees it cannot (no
// code point at or above U+0300, the first one NFC ever touches), so callers
// can skip the copy for ASCII and most Latin text.
bool MayChangeUnderNfc(std::string_view text);

}  // namespace pagoda
