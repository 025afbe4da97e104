#include "sampling/grammar/token_bitmask.h"

#include <bit>
#include <limits>

namespace pagoda::grammar {

void TokenBitmask::Resize(int32_t n_vocab) {
  size_ = n_vocab < 0 ? 0 : n_vocab;
  words_.assign((static_cast<size_t>(size_) + 63) / 64, 0);
}

void TokenBitmask::ClearAll() { std::fill(words_.begin(), words_.end(), 0); }

void TokenBitmask::SetAll() {
  std::fill(words_.begin(), words_.end(), ~uint64_t{0});
  if (size_ % 64 != 0) words_.back() = (uint64_t{1} << (size_ % 64)) - 1;
}

int32_t TokenBitmask::Count() const {
  int32_t n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

std::vector<TokenId> TokenBitmask::Allowed() const {
  std::vector<TokenId> out;
  for (size_t i = 0; i < words_.size(); ++i) {
    for (uint64_t w = words_[i]; w != 0; w &= w - 1) {
      out.push_back(static_cast<TokenId>(i * 64 + static_cast<size_t>(std::countr_zero(w))));
    }
  }
  return out;
}

void TokenBitmask::ApplyTo(std::span<float> logits) const {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t n = logits.size();
  for (size_t i = 0; i < n; i += 64) {
    const size_t w = i / 64;
    const uint64_t bits = w < words_.size() ? words_[w] : 0;
    if (bits == ~uint64_t{0}) continue;
    const size_t end = std::min(n, i + 64);
    for (size_t j = i; j < end; ++j) {
      if (!((bits >> (j - i)) & 1)) logits[j] = kNegInf;
    }
  }
}

}  // namespace pagoda::grammar
