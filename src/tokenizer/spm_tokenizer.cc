#include "tokenizer/spm_tokenizer.h"

#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t len;  // 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t len;  // combined length when pushed; a mismatch means stale
  // Highest score first, then leftmost.
  bool operator<(const Bigram& o) const {
    return score != o.score ? score < o.score : left > o.left;
  }
};

}  // namespace

SpmTokenizer::SpmTokenizer(const Vocab& vocab) {
  mergeable_.assign(vocab.size(), false);
  for (TokenId id = 0; id < vocab.size(); ++id) {
    const TokenAttr a = vocab.attrs[id];
    mergeable_[id] = a == TokenAttr::kNormal || a == TokenAttr::kUserDefined ||
                     a == TokenAttr::kUndefined;
  }
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    TokenId id = vocab.Find(hex);
    if (id == kNoToken) id = vocab.Find(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id == kNoToken ? vocab.unk : id;
  }
}

TokenId SpmTokenizer::FindMergeable(const Vocab& vocab, std::string_view text) const {
  const TokenId id = vocab.Find(text);
  return (id != kNoToken && mergeable_[id]) ? id : kNoToken;
}

void SpmTokenizer::Encode(const Vocab& vocab, std::string_view text,
                          std::vector<TokenId>* out) const {
  if (text.empty()) return;
  std::vector<Symbol> syms;
  syms.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8::CharLen(text, i);  // an invalid byte is its own symbol
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({idx - 1, idx + 1, static_cast<uint32_t>(i), static_cast<uint32_t>(n)});
    i += n;
  }
  syms.back().next = -1;

  std::priority_queue<Bigram> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = syms[left].next;
    if (right < 0) return;
    // Symbols are contiguous in `text`, so the pair is one substring.
    const uint32_t len = syms[left].len + syms[right].len;
    const TokenId id = FindMergeable(vocab, text.substr(syms[left].start, len));
    if (id != kNoToken) queue.push({vocab.scores[id], left, right, len});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = syms[b.left];
    Symbol& r = syms[b.right];
    if (l.len == 0 || r.len == 0 || l.next != b.right || l.len + r.len != b.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    consider(l.prev);
    consider(b.left);
  }

  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const std::string_view piece = text.substr(syms[i].start, syms[i].len);
    const TokenId id = FindMergeable(vocab, piece);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId bt = byte_tokens_[static_cast<uint8_t>(c)];
      if (bt != kNoToken) out->push_back(bt);
    }
  }
}

}  // namespace pagoda
