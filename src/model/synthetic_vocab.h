// A generated SentencePiece-style ("llama") vocabulary as GGUF tokenizer
// metadata (tokenizer.ggml.*), for models made without a vocab file (the demo
// model of `pagoda generate`, tests, benchmarks). Layout, as llama.cpp's SPM
// vocabularies: 0 <unk>, 1 <s> (BOS), 2 </s> (EOS), 3..258 the byte tokens
// <0x00>..<0xFF> (token_type 6), then pieces with descending scores: "▁",
// printable ASCII characters, "▁"+letter, common English words ("▁the", with
// every prefix so that SPM's pairwise merges can reach them), letter pairs
// and triples with and without "▁". Any text tokenizes (byte fallback) and
// detokenizes back to itself.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "gguf/gguf_metadata.h"

namespace pagoda {

// Specials, 256 bytes and "▁": without a "▁" piece a space would become the
// byte tokens of U+2581, which decode to "▁", not to a space.
inline constexpr int32_t kSyntheticVocabMinSize = 260;
inline constexpr int32_t kSyntheticVocabMaxSize = 1 << 20;

// n_vocab in [kSyntheticVocabMinSize, kSyntheticVocabMaxSize]. Deterministic.
Result<GgufMetadata> MakeSyntheticVocab(int32_t n_vocab);

// The same pieces as a WordPiece ("bert") vocabulary in llama.cpp's GGUF
// form (a word-start piece carries U+2581, a continuation is bare, as the
// converter rewrites "##x"): 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], 4 [MASK]
// (cls_token_id / seperator_token_id etc. set, as the bge vocabulary), then
// the pieces; no byte tokens (unknown words become [UNK]). Same size limits.
Result<GgufMetadata> MakeSyntheticWordPieceVocab(int32_t n_vocab);

}  // namespace pagoda
