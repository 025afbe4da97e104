#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace pagoda {

void SpecialTokenMatcher::Build(const Vocab& vocab) {
  nodes_.assign(1, Node{});
  first_any_.reset();
  first_always_.reset();
  for (TokenId id = 0; id < vocab.size(); ++id) {
    const TokenAttr a = vocab.attrs[id];
    if (a != TokenAttr::kControl && a != TokenAttr::kUserDefined && a != TokenAttr::kUnknown) continue;
    const std::string& text = vocab.texts[id];
    if (text.empty()) continue;
    int32_t node = 0;
    for (char c : text) {
      const auto b = static_cast<uint8_t>(c);
      int32_t child = Child(node, b);
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        auto& next = nodes_[node].next;
        next.insert(std::lower_bound(next.begin(), next.end(), std::make_pair(b, int32_t{0})),
                    {b, child});
        nodes_.emplace_back();
      }
      node = child;
    }
    if (nodes_[node].token != kNoToken) continue;  // duplicate text: first id wins
    nodes_[node].token = id;
    nodes_[node].always = (a == TokenAttr::kUserDefined);
    const auto first = static_cast<uint8_t>(text[0]);
    first_any_.set(first);
    if (nodes_[node].always) first_always_.set(first);
  }
}

int32_t SpecialTokenMatcher::Child(int32_t node, uint8_t b) const {
  const auto& next = nodes_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(b, int32_t{0}));
  return (it != next.end() && it->first == b) ? it->second : -1;
}

size_t SpecialTokenMatcher::MatchAt(std::string_view text, size_t pos, bool parse_special,
                                    TokenId* id) const {
  size_t best = 0;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = Child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    const Node& n = nodes_[node];
    if (n.token != kNoToken && (parse_special || n.always)) {
      best = i + 1 - pos;
      *id = n.token;
    }
  }
  return best;
}

void SpecialTokenMatcher::Split(std::string_view text, bool parse_special,
                                std::vector<Fragment>* out) const {
  const std::bitset<256>& first = parse_special ? first_any_ : first_always_;
  size_t start = 0;  // start of the pending text fragment
  size_t pos = 0;
  if (first.any()) {
    while (pos < text.size()) {
      TokenId id = kNoToken;
      const size_t len = first.test(static_cast<uint8_t>(text[pos]))
                             ? MatchAt(text, pos, parse_special, &id)
                             : 0;
      if (len == 0) {
        ++pos;
        continue;
      }
      if (pos > start) out->push_back({text.substr(start, pos - start), kNoToken});
      out->push_back({std::string_view(), id});
      pos += len;
      start = pos;
    }
  }
  if (start < text.size()) out->push_back({text.substr(start), kNoToken});
}

}  // namespace pagoda
