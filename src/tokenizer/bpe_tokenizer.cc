#include "tokenizer/bpe_tokenizer.h"

#include <queue>
#include <string>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

struct Symbol {
  TokenId id;  // kNoToken when this character is not in the vocabulary
  int32_t prev;
  int32_t next;
  uint32_t start;  // byte range in the mapped word
  uint32_t len;
};

struct Candidate {
  int32_t rank;
  int32_t left;  // symbol index; the right one is symbols[left].next at push time
  int32_t right;
  TokenId left_id;
  TokenId right_id;
  TokenId result;
  // Lowest rank first, then leftmost.
  bool operator<(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::Create(const Vocab& vocab,
                                                           const GgufMetadata& md,
                                                           std::unique_ptr<PreTokenizer> pre) {
  const GgufValue* value = md.Find(kKeyMerges);
  if (value == nullptr) return NotFound("missing metadata key '" + std::string(kKeyMerges) + "'");
  const GgufArray* arr = value->AsArray();
  if (arr == nullptr || arr->elem_type != GgufType::kString) {
    return InvalidArgument("metadata key '" + std::string(kKeyMerges) +
                           "' must be an array of strings");
  }
  std::unique_ptr<BpeTokenizer> bpe(new BpeTokenizer());
  bpe->pre_ = std::move(pre);
  bpe->merges_.reserve(arr->items.size());
  std::string joined;
  for (size_t i = 0; i < arr->items.size(); ++i) {
    const std::string* m = arr->items[i].AsString();
    // "left right"; the separator is searched from index 1 so a left part
    // that is itself a space still parses (llama.cpp does the same).
    const size_t sp = (m == nullptr || m->size() < 3) ? std::string::npos : m->find(' ', 1);
    if (sp == std::string::npos || sp + 1 >= m->size()) {
      return InvalidArgument("metadata key '" + std::string(kKeyMerges) + "' entry " +
                             std::to_string(i) + " is malformed: expected \"left right\", got \"" +
                             (m == nullptr ? std::string("<non-string>") : m->substr(0, 64)) + "\"");
    }
    const std::string_view left(m->data(), sp);
    const std::string_view right(m->data() + sp + 1, m->size() - sp - 1);
    const TokenId a = vocab.Find(left);
    const TokenId b = vocab.Find(right);
    joined.assign(left);
    joined.append(right);
    const TokenId r = vocab.Find(joined);
    if (a == kNoToken || b == kNoToken || r == kNoToken) continue;
    // Earlier entries have priority; a repeated pair keeps its first rank.
    bpe->merges_.emplace(PairKey(a, b), Merge{static_cast<int32_t>(i), r});
  }
  return bpe;
}

const BpeTokenizer::Merge* BpeTokenizer::FindMerge(TokenId a, TokenId b) const {
  if (a == kNoToken || b == kNoToken) return nullptr;
  auto it = merges_.find(PairKey(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeTokenizer::Encode(const Vocab& vocab, std::string_view text,
                          std::vector<TokenId>* out) const {
  std::vector<std::string_view> words;
  pre_->Split(text, &words);
  std::string mapped;
  for (std::string_view w : words) {
    mapped.clear();
    ByteEncode(w, &mapped);
    EncodeWord(vocab, mapped, out);
  }
}

void BpeTokenizer::EncodeWord(const Vocab& vocab, std::string_view word,
                              std::vector<TokenId>* out) const {
  if (word.empty()) return;
  if (pre_->ignore_merges()) {
    if (TokenId id = vocab.Find(word); id != kNoToken) {
      out->push_back(id);
      return;
    }
  }
  // The mapped word is valid UTF-8: one symbol per code point.
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  for (size_t i = 0; i < word.size();) {
    const size_t n = utf8::CharLen(word, i);
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({vocab.Find(word.substr(i, n)), idx - 1, idx + 1, static_cast<uint32_t>(i),
                    static_cast<uint32_t>(n)});
    i += n;
  }
  syms.back().next = -1;

  std::priority_queue<Candidate> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = syms[left].next;
    if (right < 0) return;
    if (const Merge* m = FindMerge(syms[left].id, syms[right].id)) {
      queue.push({m->rank, left, right, syms[left].id, syms[right].id, m->result});
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = syms[c.left];
    Symbol& r = syms[c.right];
    // Stale if either side has merged since (lengths zeroed or ids changed).
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.id != c.left_id || r.id != c.right_id) {
      continue;
    }
    l.id = c.result;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }

  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const Symbol& s = syms[i];
    if (s.id != kNoToken) {
      out->push_back(s.id);
    } else if (vocab.unk != kNoToken) {
      // A character the vocabulary lacks (never the case for a complete
      // byte-level vocabulary).
      out->push_back(vocab.unk);
    }
  }
}

}  // namespace pagoda
