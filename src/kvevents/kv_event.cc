#include "kvevents/kv_event.h"

#include <functional>
#include <string_view>

#include <xxhash.h>

namespace pagoda::kvevents {

ExternalBlockHash ExternalBlockHash::FromInt(uint64_t v) {
  ExternalBlockHash h;
  h.int_ = v;
  return h;
}

ExternalBlockHash ExternalBlockHash::FromBytes(std::string b) {
  ExternalBlockHash h;
  h.is_bytes_ = true;
  h.bytes_ = std::move(b);
  return h;
}

uint64_t SaltDigest(std::string_view salt) { return XXH3_64bits(salt.data(), salt.size()); }

size_t ExternalBlockHash::Hasher::operator()(const ExternalBlockHash& h) const {
  if (h.is_bytes()) return std::hash<std::string_view>{}(h.bytes()) ^ 0x9e3779b97f4a7c15ULL;
  // Engine hashes are already uniform; mix anyway for hand-written ones.
  uint64_t x = h.int_value();
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<size_t>(x);
}

}  // namespace pagoda::kvevents
