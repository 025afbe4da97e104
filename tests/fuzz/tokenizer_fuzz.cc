// libFuzzer target: the tokenizers must accept any byte string, never crash or
// read out of bounds, and keep their round-trip guarantees:
//  - byte-level BPE: Decode(Encode(x)) == x, with or without special parsing
//    (specials are decoded with special = true); for "qwen2", which normalizes
//    to NFC by default, when NFC leaves x unchanged (otherwise the decoded
//    text is still valid UTF-8 when x is);
//  - SPM with byte fallback, no special parsing: Decode(Encode(x)) == x;
//  - StreamingDecoder output is valid UTF-8, and equals x when x is;
//  - WordPiece (lossy: lowercase, accents, [UNK]): ids in range, [CLS] ...
//    [SEP] with add_special, and the decoded text is valid UTF-8 without a
//    word-start mark (U+2581).
// Built with clang under ASan + UBSan (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_metadata.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using pagoda::GgufMetadata;
using pagoda::GgufValue;
using pagoda::Tokenizer;

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: invariant violated: %s\n", what);
    __builtin_trap();
  }
}

std::unique_ptr<Tokenizer> Build(const GgufMetadata& md) {
  auto tok = Tokenizer::FromMetadata(md);
  Require(tok.ok(), "building the fuzz vocabulary");
  return std::move(tok).value();
}

std::unique_ptr<Tokenizer> MakeSpm() {
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
  const char* pieces[] = {"\xE2\x96\x81", "e", "t", "a", "o", "\xE2\x96\x81t", "he",
                          "\xE2\x96\x81the", "\xE2\x96\x81" "a", "in", "er", "\xC3\xA9", "\xE4\xB8\xAD",
                          "\xE2\x96\x81\xE2\x96\x81", "th", "\xE2\x96\x81th"};
  float score = -1;
  for (const char* p : pieces) {
    tokens.push_back(p);
    scores.push_back(score--);
    types.push_back(1);
  }
  tokens.push_back("<|im_end|>");
  scores.push_back(0);
  types.push_back(3);
  GgufMetadata md;
  md.Set("tokenizer.ggml.model", "llama");
  md.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  md.Set("tokenizer.ggml.scores", GgufValue::F32Array(scores));
  md.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  return Build(md);
}

std::unique_ptr<Tokenizer> MakeBpe(const char* pre) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(pagoda::ByteToUnicode(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  const std::vector<std::string> merges = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "i n", "e r",
                                           "\xC4\xA0 a", "o n", "\xC4\xA0 \xC4\xA0", "1 2",
                                           "\xC4\xA0\xC4\xA0 \xC4\xA0\xC4\xA0", "\xC3 \xA9"};
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ', 1);
    tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
    types.push_back(1);
  }
  for (const char* special : {"<|endoftext|>", "<|im_start|>"}) {
    tokens.push_back(special);
    types.push_back(3);
  }
  tokens.push_back("<tool>");
  types.push_back(4);
  GgufMetadata md;
  md.Set("tokenizer.ggml.model", "gpt2");
  md.Set("tokenizer.ggml.pre", pre);
  md.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  md.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  md.Set("tokenizer.ggml.merges", GgufValue::StringArray(merges));
  return Build(md);
}

// A tiny BERT WordPiece vocabulary as llama.cpp's converter writes one
// (word starts marked with U+2581, continuations bare).
std::unique_ptr<Tokenizer> MakeWpm() {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::vector<int32_t> types = {3, 3, 3, 3, 3};
  const char* pieces[] = {"\xE2\x96\x81the", "\xE2\x96\x81" "a", "a", "e", "t", "he", "\xE2\x96\x81t",
                          "\xE2\x96\x81,", "\xE2\x96\x81.", "\xE2\x96\x81'", "\xE2\x96\x81!", "s",
                          "\xE2\x96\x81\xE4\xB8\xAD", "\xE2\x96\x81" "1", "2", "\xE2\x96\x81" "e",
                          "\xE2\x96\x81\xCE\xB1", "ing", "[unused0]"};
  for (const char* p : pieces) {
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
  return Build(md);
}

void CheckStreaming(const Tokenizer& tok, const std::vector<pagoda::TokenId>& ids,
                    const std::string& expect_if_valid, bool special) {
  pagoda::StreamingDecoder dec(tok, special);
  std::string out;
  for (pagoda::TokenId id : ids) {
    const std::string part = dec.Push(id);
    Require(pagoda::utf8::IsValid(part), "streaming chunk is valid UTF-8");
    out += part;
  }
  const std::string rest = dec.Flush();
  Require(pagoda::utf8::IsValid(rest), "streaming flush is valid UTF-8");
  out += rest;
  if (pagoda::utf8::IsValid(expect_if_valid)) Require(out == expect_if_valid, "streaming == text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Built once and never destroyed: plain pointer arrays have no exit-time
  // destructor, so LeakSanitizer still sees the tokenizers as reachable.
  static const Tokenizer* const spm = MakeSpm().release();
  static const Tokenizer* const bpes[] = {MakeBpe("gpt-2").release(), MakeBpe("llama-bpe").release(),
                                          MakeBpe("qwen2").release(), MakeBpe("deepseek-llm").release(),
                                          MakeBpe("deepseek-v3").release()};
  static const Tokenizer* const wpm = MakeWpm().release();
  constexpr size_t kBpes = sizeof(bpes) / sizeof(bpes[0]);
  const std::string text(reinterpret_cast<const char*>(data), size);

  // SPM: lossless without special parsing (there are no user-defined tokens),
  // except that a literal U+2581 in the input reads back as a space, as in
  // SentencePiece itself.
  const auto spm_ids = spm->Encode(text, /*add_special=*/false, /*parse_special=*/false);
  if (text.find("\xE2\x96\x81") == std::string::npos) {
    Require(spm->Decode(spm_ids) == text, "SPM Decode(Encode(x)) == x");
    // Streaming keeps the space SPM puts in front of the text; Decode drops it.
    CheckStreaming(*spm, spm_ids, text.empty() ? text : " " + text, false);
  }
  const auto spm_special = spm->Encode(text, true, true);
  for (pagoda::TokenId id : spm_special) Require(id >= 0 && id < spm->vocab_size(), "SPM id range");
  (void)spm->Decode(spm_special, true);

  // Which BPE flavour runs is picked by the first byte, so every input still
  // reaches all of them across the corpus.
  const Tokenizer& bpe = *bpes[size == 0 ? 0 : data[0] % kBpes];
  bool changed_by_nfc = false;
  if (bpe.normalization() == pagoda::Normalization::kNfc) {
    std::string nfc;
    pagoda::AppendNfc(text, &nfc);
    changed_by_nfc = nfc != text;
  }
  for (bool parse_special : {false, true}) {
    const auto ids = bpe.Encode(text, /*add_special=*/true, parse_special);
    for (pagoda::TokenId id : ids) Require(id >= 0 && id < bpe.vocab_size(), "BPE id range");
    const std::string decoded = bpe.Decode(ids, /*special=*/true);
    if (changed_by_nfc) {
      Require(!pagoda::utf8::IsValid(text) || pagoda::utf8::IsValid(decoded),
              "BPE NFC output of valid UTF-8 is valid");
    } else {
      Require(decoded == text, "BPE Decode(Encode(x)) == x");
    }
    CheckStreaming(bpe, ids, decoded, /*special=*/true);
  }

  for (bool parse_special : {false, true}) {
    const auto ids = wpm->Encode(text, /*add_special=*/true, parse_special);
    Require(ids.size() >= 2 && ids.front() == wpm->bos() && ids.back() == wpm->sep(),
            "WPM [CLS] ... [SEP]");
    for (pagoda::TokenId id : ids) Require(id >= 0 && id < wpm->vocab_size(), "WPM id range");
    for (bool special : {false, true}) {
      const std::string decoded = wpm->Decode(ids, special);
      Require(pagoda::utf8::IsValid(decoded), "WPM decoded text is valid UTF-8");
      Require(decoded.find("\xE2\x96\x81") == std::string::npos, "WPM decoded text has no U+2581");
    }
  }
  return 0;
}
