#include "tokenizer/wpm_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581, llama.cpp's word-start mark
// Hugging Face WordPiece's max_input_chars_per_word (BERT's default).
constexpr size_t kMaxWordChars = 100;

// Rust's char::is_whitespace (Unicode White_Space), which Hugging Face
// tokenizers' BertNormalizer uses. U+000B, U+000C and U+0085 are listed
// too, but as category Cc they are dropped before this is asked.
bool IsWhiteSpace(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

// Category C* (Cc, Cf, Cs, Co, Cn): dropped by clean_text.
bool IsOther(uint32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

// Hugging Face tokenizers' is_chinese_char. Its fifth range starts at
// U+2B920 where the original Python BERT has U+2B820; we follow the Rust
// one, which AutoTokenizer (and so the test vectors) use.
bool IsCjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool IsPunctuation(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
           (cp >= 123 && cp <= 126);
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

void AppendNormalizedAscii(char c, std::string* out) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
    out->push_back(' ');
  } else if (c < 0x20 || c == 0x7F) {
    // Cc (NUL, \v and \f included): dropped.
  } else {
    out->push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
}

// One code point of the NFD form. Decomposing first and filtering after is
// the same as Hugging Face's clean -> CJK -> NFD -> strip -> lowercase: no
// control, white-space or CJK character decomposes into a different class.
void AppendNormalizedCodePoint(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    AppendNormalizedAscii(static_cast<char>(cp), out);
    return;
  }
  if (cp == 0xFFFD || IsOther(cp)) return;
  if (IsWhiteSpace(cp)) {
    out->push_back(' ');
  } else if (IsCjk(cp)) {
    out->push_back(' ');
    utf8::Append(out, cp);
    out->push_back(' ');
  } else if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) != UTF8PROC_CATEGORY_MN) {
    utf8::Append(out, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
  }
}

// One run of valid UTF-8.
void AppendNormalizedValid(std::string_view run, std::vector<utf8proc_int32_t>* cps,
                           std::string* out) {
  if (std::all_of(run.begin(), run.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; })) {
    for (char c : run) AppendNormalizedAscii(c, out);
    return;
  }
  // Canonical decomposition with canonical reordering (NFD). A canonical
  // decomposition can be longer in code points than the input in bytes
  // (U+1F82 is 3 bytes, 4 code points), hence the retry.
  const auto options = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  const auto* data = reinterpret_cast<const utf8proc_uint8_t*>(run.data());
  const auto len = static_cast<utf8proc_ssize_t>(run.size());
  cps->resize(run.size() + 8);
  utf8proc_ssize_t n = utf8proc_decompose(data, len, cps->data(),
                                          static_cast<utf8proc_ssize_t>(cps->size()), options);
  if (n > static_cast<utf8proc_ssize_t>(cps->size())) {
    cps->resize(static_cast<size_t>(n));
    n = utf8proc_decompose(data, len, cps->data(), n, options);
  }
  if (n < 0) {
    // utf8proc rejects nothing that utf8::ValidSeqLen accepts; should that
    // ever differ, normalize code point by code point without NFD.
    for (size_t i = 0; i < run.size();) {
      const size_t k = utf8::CharLen(run, i);
      AppendNormalizedCodePoint(utf8::ValidSeqLen(run, i) ? utf8::DecodeAt(run, i, k) : 0xFFFD,
                                out);
      i += k;
    }
    return;
  }
  for (utf8proc_ssize_t i = 0; i < n; ++i) {
    AppendNormalizedCodePoint(static_cast<uint32_t>((*cps)[static_cast<size_t>(i)]), out);
  }
}

}  // namespace

void AppendBertNormalized(std::string_view text, std::string* out) {
  out->reserve(out->size() + text.size());
  std::vector<utf8proc_int32_t> cps;
  size_t run_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = utf8::ValidSeqLen(text, i);
    if (n > 0) {
      i += n;
      continue;
    }
    AppendNormalizedValid(text.substr(run_start, i - run_start), &cps, out);
    out->push_back(text[i]);  // an invalid byte is kept; no token will match it
    run_start = ++i;
  }
  AppendNormalizedValid(text.substr(run_start), &cps, out);
}

void SplitBertWords(std::string_view normalized, std::vector<std::string_view>* words) {
  size_t word_start = 0;
  auto flush = [&](size_t end) {
    if (end > word_start) words->push_back(normalized.substr(word_start, end - word_start));
  };
  for (size_t i = 0; i < normalized.size();) {
    const size_t n = utf8::ValidSeqLen(normalized, i);
    if (n == 0) {  // invalid byte: part of the word
      ++i;
      continue;
    }
    const uint32_t cp = utf8::DecodeAt(normalized, i, n);
    if (cp == ' ') {
      flush(i);
      word_start = i + 1;
    } else if (IsPunctuation(cp)) {
      flush(i);
      words->push_back(normalized.substr(i, n));
      word_start = i + n;
    }
    i += n;
  }
  flush(normalized.size());
}

WpmTokenizer::WpmTokenizer(const Vocab& vocab) {
  matchable_.assign(vocab.size(), false);
  for (TokenId id = 0; id < vocab.size(); ++id) {
    const TokenAttr a = vocab.attrs[id];
    matchable_[id] = a == TokenAttr::kNormal || a == TokenAttr::kUserDefined ||
                     a == TokenAttr::kUndefined;
    if (matchable_[id]) max_piece_bytes_ = std::max(max_piece_bytes_, vocab.texts[id].size());
  }
}

TokenId WpmTokenizer::FindPiece(const Vocab& vocab, std::string_view text) const {
  if (text.size() > max_piece_bytes_) return kNoToken;
  const TokenId id = vocab.Find(text);
  return (id != kNoToken && matchable_[id]) ? id : kNoToken;
}

void WpmTokenizer::EncodeWord(const Vocab& vocab, std::string_view word, std::string* scratch,
                              std::vector<TokenId>* out) const {
  // Character boundaries: bounds[k] is where character k starts, the last
  // entry is the end. An invalid byte counts as one character.
  std::vector<uint32_t> bounds;
  bounds.reserve(word.size() + 1);
  for (size_t i = 0; i < word.size() && bounds.size() <= kMaxWordChars;
       i += utf8::CharLen(word, i)) {
    bounds.push_back(static_cast<uint32_t>(i));
  }
  const size_t n_chars = bounds.size();
  const size_t first_out = out->size();
  bool ok = n_chars <= kMaxWordChars;
  bounds.push_back(static_cast<uint32_t>(word.size()));
  scratch->assign(kWordStart);
  scratch->append(word);
  // Greedy longest match: the first piece carries U+2581, the others are
  // continuations. A continuation must not start with U+2581 itself, which
  // would make it a word-start token (Hugging Face would look up "##\u2581...").
  for (size_t k = 0; ok && k < n_chars;) {
    const bool first = k == 0;
    if (!first && word.substr(bounds[k]).starts_with(kWordStart)) {
      ok = false;
      break;
    }
    TokenId id = kNoToken;
    size_t e = n_chars;
    for (; e > k; --e) {
      const std::string_view piece =
          first ? std::string_view(*scratch).substr(0, kWordStart.size() + bounds[e])
                : word.substr(bounds[k], bounds[e] - bounds[k]);
      id = FindPiece(vocab, piece);
      if (id != kNoToken) break;
    }
    if (id == kNoToken) {
      ok = false;
      break;
    }
    out->push_back(id);
    k = e;
  }
  if (!ok) {
    out->resize(first_out);
    if (vocab.unk != kNoToken) out->push_back(vocab.unk);
  }
}

void WpmTokenizer::Encode(const Vocab& vocab, std::string_view text,
                          std::vector<TokenId>* out) const {
  std::string normalized;
  AppendBertNormalized(text, &normalized);
  std::vector<std::string_view> words;
  SplitBertWords(normalized, &words);
  std::string scratch;
  for (std::string_view word : words) EncodeWord(vocab, word, &scratch, out);
}

}  // namespace pagoda
