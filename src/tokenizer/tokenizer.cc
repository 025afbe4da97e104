#include "tokenizer/tokenizer.h"

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/wpm_tokenizer.h"

namespace pagoda {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

void EscapeSpaces(std::string_view text, std::string* out) {
  for (char c : text) {
    if (c == ' ') {
      out->append(kSpaceMark);
    } else {
      out->push_back(c);
    }
  }
}

std::string UnescapeSpaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      out.push_back(' ');
      i += kSpaceMark.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// "<0xNN>" -> NN, or -1.
int ParseByteToken(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(t[3]);
  const int lo = hex(t[4]);
  return (hi < 0 || lo < 0) ? -1 : hi * 16 + lo;
}

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  std::string out;
  size_t last = 0;
  for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, last)) {
    out.append(*s, last, pos - last);
    out.append(to);
    last = pos + from.size();
  }
  if (last == 0) return;
  out.append(*s, last);
  *s = std::move(out);
}

// Hugging Face's clean_up_tokenization, the same replacements in the same
// order: WordPiece pieces are space-separated words, punctuation included.
void CleanUpTokenizationSpaces(std::string* s) {
  constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
  };
  for (const auto& [from, to] : kRules) ReplaceAll(s, from, to);
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromMetadata(const GgufMetadata& md) {
  PAGODA_ASSIGN_OR_RETURN(std::string model, md.GetString(kKeyModel));
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  if (model == "llama") {
    tok->kind_ = TokenizerKind::kSpm;
    PAGODA_ASSIGN_OR_RETURN(tok->vocab_, Vocab::Load(md, TokenizerKind::kSpm));
    tok->spm_ = std::make_unique<SpmTokenizer>(tok->vocab_);
  } else if (model == "gpt2") {
    tok->kind_ = TokenizerKind::kBpe;
    PAGODA_ASSIGN_OR_RETURN(tok->pre_, md.GetStringOr(kKeyPre, ""));
    PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> pre, PreTokenizer::Create(tok->pre_));
    PAGODA_ASSIGN_OR_RETURN(tok->vocab_,
                            Vocab::Load(md, TokenizerKind::kBpe, pre->default_add_bos()));
    PAGODA_ASSIGN_OR_RETURN(tok->bpe_, BpeTokenizer::Create(tok->vocab_, md, std::move(pre)));
  } else if (model == "bert") {
    tok->kind_ = TokenizerKind::kWpm;
    PAGODA_ASSIGN_OR_RETURN(tok->vocab_, Vocab::Load(md, TokenizerKind::kWpm));
    tok->wpm_ = std::make_unique<WpmTokenizer>(tok->vocab_);
  } else if (model == "t5" || model == "rwkv" || model == "plamo2" ||
             model == "gemma4" || model == "no_vocab" || model == "none") {
    return Unimplemented("'" + std::string(kKeyModel) + "' = '" + model +
                         "' is not supported (only 'llama' SentencePiece, 'gpt2' byte-level "
                         "BPE and 'bert' WordPiece vocabularies are)");
  } else {
    return InvalidArgument("unknown '" + std::string(kKeyModel) + "' = '" + model + "'");
  }
  PAGODA_ASSIGN_OR_RETURN(tok->normalization_, ReadNormalization(md, tok->pre_));
  tok->specials_.Build(tok->vocab_);
  tok->BuildPieces();
  return tok;
}

void Tokenizer::BuildPieces() {
  pieces_.resize(vocab_.size());
  for (TokenId id = 0; id < vocab_.size(); ++id) {
    const std::string& text = vocab_.texts[id];
    std::string& piece = pieces_[id];
    switch (vocab_.attrs[id]) {
      case TokenAttr::kControl:
      case TokenAttr::kUnknown:
        piece = text;
        break;
      case TokenAttr::kUserDefined:
        // SentencePiece decodes U+2581 as a space in user-defined pieces too
        // (Gemma's added tokens 138-167 are runs of it). llama.cpp copies them
        // raw, but its converter has already rewritten U+2581 to ' ' in those
        // texts; we keep the raw text for matching, so unescape here.
        piece = kind_ == TokenizerKind::kSpm ? UnescapeSpaces(text) : text;
        break;
      case TokenAttr::kUnused:
        break;
      case TokenAttr::kByte:
        if (const int b = ParseByteToken(text); b >= 0) {
          piece.assign(1, static_cast<char>(b));
          break;
        }
        [[fallthrough]];
      case TokenAttr::kNormal:
      case TokenAttr::kUndefined:
        if (kind_ == TokenizerKind::kSpm || kind_ == TokenizerKind::kWpm) {
          piece = UnescapeSpaces(text);
        } else {
          ByteDecode(text, &piece);
        }
        break;
    }
  }
}

void Tokenizer::EncodeText(std::string_view text, bool after_special,
                           std::vector<TokenId>* out) const {
  std::string normalized;
  if (normalization_ == Normalization::kNfc && MayChangeUnderNfc(text)) {
    normalized.reserve(text.size());
    AppendNfc(text, &normalized);
    text = normalized;
  }
  if (kind_ == TokenizerKind::kBpe) {
    bpe_->Encode(vocab_, text, out);
    return;
  }
  if (kind_ == TokenizerKind::kWpm) {
    wpm_->Encode(vocab_, text, out);
    return;
  }
  // SentencePiece adds a dummy space at the start of the text, which
  // llama.cpp repeats after every special token.
  std::string escaped;
  escaped.reserve(text.size() + 8);
  if (vocab_.add_space_prefix && after_special) escaped.append(kSpaceMark);
  EscapeSpaces(text, &escaped);
  spm_->Encode(vocab_, escaped, out);
}

std::vector<TokenId> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<TokenId> out;
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
  if (!text.empty()) {
    std::vector<Fragment> fragments;
    specials_.Split(text, parse_special, &fragments);
    bool after_special = true;
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        after_special = true;
      } else {
        EncodeText(f.text, after_special, &out);
        after_special = false;
      }
    }
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
  if (add_special && vocab_.add_sep) out.push_back(vocab_.sep);
  return out;
}

std::string_view Tokenizer::PieceView(TokenId id, bool special) const {
  if (!vocab_.InRange(id)) return {};
  const TokenAttr a = vocab_.attrs[id];
  if (!special && (a == TokenAttr::kControl || a == TokenAttr::kUnknown)) return {};
  return pieces_[id];
}

std::string Tokenizer::Decode(std::span<const TokenId> ids, bool special) const {
  if (kind_ == TokenizerKind::kWpm) return DecodeWordPiece(ids, special);
  std::string out;
  size_t i = 0;
  bool strip_space = vocab_.add_space_prefix;
  if (strip_space && !ids.empty() && ids[0] == vocab_.bos && vocab_.bos != kNoToken) {
    out.append(PieceView(ids[0], special));
    i = 1;
  }
  for (; i < ids.size(); ++i) {
    std::string_view piece = PieceView(ids[i], special);
    if (strip_space) {
      if (!piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
      strip_space = false;
    }
    out.append(piece);
  }
  return out;
}

std::string Tokenizer::DecodeWordPiece(std::span<const TokenId> ids, bool special) const {
  // Every word-start piece begins with a space; Hugging Face also writes
  // special tokens as words of their own ("[CLS] hello [SEP]"). The space in
  // front of the first word goes.
  std::string out;
  for (const TokenId id : ids) {
    const std::string_view piece = PieceView(id, special);
    if (piece.empty()) continue;
    const TokenAttr a = vocab_.attrs[id];
    if (a == TokenAttr::kControl || a == TokenAttr::kUnknown) out.push_back(' ');
    out.append(piece);
  }
  if (!out.empty() && out[0] == ' ') out.erase(0, 1);
  CleanUpTokenizationSpaces(&out);
  return out;
}

const std::string& Tokenizer::token_text(TokenId id) const {
  static const std::string kEmpty;
  return vocab_.InRange(id) ? vocab_.texts[id] : kEmpty;
}

}  // namespace pagoda
