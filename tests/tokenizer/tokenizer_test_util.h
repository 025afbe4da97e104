// Helpers for the tokenizer tests: loading real GGUF vocabularies from the
// shared test data, reading the llama.cpp .inp/.out vectors, and building
// small in-memory vocabularies.
#pragma once

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "gguf/gguf_metadata.h"
#include "support/test_paths.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::testing {

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The test strings of a llama.cpp vocab .inp file.
inline std::vector<std::string> ReadVocabInputs(const std::string& path) {
  const std::string data = ReadWholeFile(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t start = 0;
  while (start < data.size()) {
    const size_t end = data.find(sep, start);
    if (end == std::string::npos) {
      out.push_back(data.substr(start));
      break;
    }
    out.push_back(data.substr(start, end - start));
    start = end + sep.size();
  }
  return out;
}

// One line of ids per test string.
inline std::vector<std::vector<TokenId>> ReadVocabOutputs(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::vector<TokenId>> out;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::vector<TokenId> ids;
    TokenId id = 0;
    while (ls >> id) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

inline Result<std::unique_ptr<Tokenizer>> LoadTokenizerFromGguf(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  return Tokenizer::FromMetadata(file->metadata());
}

// A tiny SPM vocabulary: <unk> <s> </s>, then 256 byte tokens, then `pieces`
// (normal tokens, scored by position: earlier = better).
inline GgufMetadata MakeSpmMetadata(const std::vector<std::string>& pieces,
                                    const std::vector<std::pair<std::string, TokenAttr>>& extra = {}) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    scores.push_back(0);
    types.push_back(6);
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    tokens.push_back(pieces[i]);
    scores.push_back(-static_cast<float>(i));
    types.push_back(1);
  }
  for (const auto& [text, attr] : extra) {
    tokens.push_back(text);
    scores.push_back(0);
    types.push_back(static_cast<int32_t>(attr));
  }
  GgufMetadata md;
  md.Set("tokenizer.ggml.model", "llama");
  md.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  md.Set("tokenizer.ggml.scores", GgufValue::F32Array(scores));
  md.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  md.Set("tokenizer.ggml.bos_token_id", uint32_t{1});
  md.Set("tokenizer.ggml.eos_token_id", uint32_t{2});
  md.Set("tokenizer.ggml.unknown_token_id", uint32_t{0});
  return md;
}

// A tiny byte-level BPE vocabulary: the 256 byte symbols (ids 0-255 in byte
// order), then the results of `merges` in order, then `extra` tokens.
inline GgufMetadata MakeBpeMetadata(const std::vector<std::string>& merges, const std::string& pre,
                                    const std::vector<std::pair<std::string, TokenAttr>>& extra = {}) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(ByteToUnicode(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ', 1);
    tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
    types.push_back(1);
  }
  for (const auto& [text, attr] : extra) {
    tokens.push_back(text);
    types.push_back(static_cast<int32_t>(attr));
  }
  GgufMetadata md;
  md.Set("tokenizer.ggml.model", "gpt2");
  md.Set("tokenizer.ggml.pre", pre);
  md.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  md.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  md.Set("tokenizer.ggml.merges", GgufValue::StringArray(merges));
  return md;
}

// A tiny WordPiece vocabulary as llama.cpp's converter writes one: [PAD]
// [UNK] [CLS] [SEP] [MASK] (ids 0-4, control), then `pieces` (normal), where
// a word-start piece carries U+2581 and a continuation has no mark.
inline GgufMetadata MakeWpmMetadata(const std::vector<std::string>& pieces) {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::vector<int32_t> types = {3, 3, 3, 3, 3};
  for (const std::string& p : pieces) {
    tokens.push_back(p);
    types.push_back(1);
  }
  GgufMetadata md;
  md.Set("tokenizer.ggml.model", "bert");
  md.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  md.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  md.Set("tokenizer.ggml.unknown_token_id", uint32_t{1});
  md.Set("tokenizer.ggml.cls_token_id", uint32_t{2});
  md.Set("tokenizer.ggml.seperator_token_id", uint32_t{3});
  md.Set("tokenizer.ggml.padding_token_id", uint32_t{0});
  return md;
}

}  // namespace pagoda::testing
