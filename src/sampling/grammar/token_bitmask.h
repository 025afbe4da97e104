// TokenBitmask: one bit per vocabulary token (1 = allowed), the form in
// which a grammar's allowed next tokens reach the sampler. A plain value;
// not shared between threads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda::grammar {

using TokenId = int32_t;

class TokenBitmask {
 public:
  TokenBitmask() = default;
  explicit TokenBitmask(int32_t n_vocab) { Resize(n_vocab); }

  // Resizes to n_vocab bits, all clear.
  void Resize(int32_t n_vocab);
  void ClearAll();
  void SetAll();  // every id < size()
  void Set(TokenId id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  void Reset(TokenId id) { words_[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63)); }
  bool Test(TokenId id) const {
    return id >= 0 && id < size_ && ((words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1);
  }
  int32_t size() const { return size_; }
  int32_t Count() const;
  // The allowed ids, ascending.
  std::vector<TokenId> Allowed() const;
  std::span<uint64_t> words() { return words_; }
  std::span<const uint64_t> words() const { return words_; }

  // logits[i] = -infinity for every i whose bit is clear (ids >= size() too).
  void ApplyTo(std::span<float> logits) const;

 private:
  int32_t size_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace pagoda::grammar
