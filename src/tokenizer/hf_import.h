// ImportHfTokenizer: turns a Hugging Face tokenizer.json (and, optionally, its
// tokenizer_config.json) into GGUF tokenizer.* metadata, the way llama.cpp's
// convert_hf_to_gguf does, so that Tokenizer::FromMetadata reproduces the HF
// tokenization exactly.
//
// Supported:
//  - byte-level BPE (GPT-2 style, "gpt2"): the pre-tokenizer regexes must be
//    ones we recognise; they become tokenizer.ggml.pre (llama-bpe, qwen2,
//    deepseek-v3, gpt-2).
//  - SentencePiece-style BPE with byte fallback ("llama": Llama 2, Mistral,
//    Gemma): scores are derived from the merge ranks so that score-driven SPM
//    merging reproduces the BPE merges.
//  - an NFC normalizer, recorded as tokenizer.pagoda.normalizer = "nfc"
//    (otherwise "none"; see normalizer.h and docs/TOKENIZERS.md).
// Anything else (Unigram, WordPiece, unknown regexes, normalizers we cannot
// express) is an error that names what is unsupported.
#pragma once

#include <string>

#include "base/status.h"
#include "gguf/gguf_metadata.h"

namespace pagoda {

// `tokenizer_config_json` may be empty. Returns only tokenizer.* keys.
Result<GgufMetadata> ImportHfTokenizer(const std::string& tokenizer_json,
                                       const std::string& tokenizer_config_json);

}  // namespace pagoda
