#include "kv/block_file.h"

#include <bit>
#include <cstring>
#include <string>

#include <xxhash.h>

#include "base/check.h"

namespace pagoda::kv {

// Integers, tokens and the payload are copied as they lie in memory.
static_assert(std::endian::native == std::endian::little, "block files are little-endian");

namespace {

constexpr char kMagic[8] = {'P', 'G', 'K', 'V', 'B', 'L', 'K', '\0'};
constexpr int64_t kMaxBlockSize = int64_t{1} << 20;  // BlockPool's bound

// Header field offsets (block_file.h).
enum HeaderOffset : size_t {
  kOffVersion = 8, kOffHeaderBytes = 12, kOffFingerprint = 16, kOffLayoutHash = 24, kOffType = 32,
  kOffBlockSize = 36, kOffLayers = 40, kOffReserved0 = 44, kOffHash = 48, kOffParent = 64,
  kOffPayloadBytes = 80, kOffReserved1 = 88,
};

template <class T>
void Store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(v));
}

template <class T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <class T>
void Append(std::vector<uint8_t>* out, T v) {
  const size_t at = out->size();
  out->resize(at + sizeof(v));
  Store(out->data() + at, v);
}

int64_t HeaderBytes(int64_t block_size) { return kBlockFileFixedHeader + 4 * block_size; }

bool LayoutUsable(const BlockLayout& l) {
  return !l.layers.empty() && l.block_size >= 1 && l.block_size <= kMaxBlockSize && l.block_bytes > 0;
}

// A fixed header's worth of bytes, this format's magic and version.
Status CheckMagicAndVersion(std::span<const uint8_t> bytes) {
  if (static_cast<int64_t>(bytes.size()) < kBlockFileFixedHeader) {
    return InvalidArgument("KV block file: truncated header (" + std::to_string(bytes.size()) + " bytes)");
  }
  const uint8_t* p = bytes.data();
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0) return InvalidArgument("KV block file: bad magic");
  const uint32_t version = Load<uint32_t>(p + kOffVersion);
  if (version != kBlockFileVersion) {
    return InvalidArgument("KV block file: unsupported version " + std::to_string(version));
  }
  return Status::Ok();
}

// Everything DecodeBlockHeader checks; on success the record's header
// fields agree with `expect`, so its header is HeaderBytes(expect.block_size) long.
Result<BlockRecord> ParseHeader(const BlockLayout& expect, std::span<const uint8_t> bytes) {
  if (!LayoutUsable(expect)) return InvalidArgument("KV block file: the reader's layout is invalid");
  PAGODA_RETURN_IF_ERROR(CheckMagicAndVersion(bytes));
  const uint8_t* p = bytes.data();
  // Self-consistency first, in 64 bits, so that no field can size anything.
  const uint32_t block_size = Load<uint32_t>(p + kOffBlockSize);
  const uint32_t header_bytes = Load<uint32_t>(p + kOffHeaderBytes);
  const uint32_t n_layers = Load<uint32_t>(p + kOffLayers);
  const uint64_t payload_bytes = Load<uint64_t>(p + kOffPayloadBytes);
  if (block_size < 1 || block_size > kMaxBlockSize || int64_t{header_bytes} != HeaderBytes(block_size)) {
    return InvalidArgument("KV block file: bad block size " + std::to_string(block_size) + " or header size " +
                           std::to_string(header_bytes));
  }
  if (n_layers < 1 || payload_bytes < 1) return InvalidArgument("KV block file: no layers or empty payload");
  if (Load<uint32_t>(p + kOffReserved0) != 0 || Load<uint64_t>(p + kOffReserved1) != 0) {
    return InvalidArgument("KV block file: reserved fields are not zero");
  }
  if (Load<uint64_t>(p + kOffFingerprint) != expect.model_fingerprint) {
    return FailedPrecondition("KV block file: written for another model");
  }
  if (Load<uint64_t>(p + kOffLayoutHash) != expect.LayoutHash()) {
    return FailedPrecondition("KV block file: written with another KV layout");
  }
  // The layout hash matched, so these disagreeing is a damaged header.
  if (Load<uint32_t>(p + kOffType) != static_cast<uint32_t>(expect.type) ||
      int64_t{block_size} != expect.block_size || n_layers != expect.layers.size() ||
      payload_bytes != static_cast<uint64_t>(expect.block_bytes)) {
    return InvalidArgument("KV block file: header fields disagree with its layout hash");
  }
  if (static_cast<int64_t>(bytes.size()) < int64_t{header_bytes}) {
    return InvalidArgument("KV block file: truncated token list");
  }
  BlockRecord rec;
  rec.hash = BlockHash{Load<uint64_t>(p + kOffHash), Load<uint64_t>(p + kOffHash + 8)};
  rec.parent = BlockHash{Load<uint64_t>(p + kOffParent), Load<uint64_t>(p + kOffParent + 8)};
  rec.tokens.resize(block_size);
  std::memcpy(rec.tokens.data(), p + kBlockFileFixedHeader, 4 * size_t{block_size});
  return rec;
}

}  // namespace

uint64_t BlockLayout::LayoutHash() const {
  // Hashed bytes: le32 n_layers, per layer le64 k, le64 v, le32 n_head_kv,
  // then le32 type, le32 block_size, le64 block_bytes.
  std::vector<uint8_t> b;
  b.reserve(4 + 20 * layers.size() + 16);
  Append(&b, static_cast<uint32_t>(layers.size()));
  for (const KvLayerWidths& l : layers) {
    Append(&b, static_cast<int64_t>(l.k));
    Append(&b, static_cast<int64_t>(l.v));
    Append(&b, static_cast<int32_t>(l.n_head_kv));
  }
  Append(&b, static_cast<uint32_t>(type));
  Append(&b, static_cast<int32_t>(block_size));
  Append(&b, static_cast<int64_t>(block_bytes));
  return XXH3_64bits(b.data(), b.size());
}

void EncodeBlock(const BlockLayout& layout, const BlockHash& hash, const BlockHash& parent,
                 std::span<const int32_t> tokens, const void* payload, std::vector<uint8_t>* out) {
  PAGODA_CHECK(LayoutUsable(layout)) << "KV block file: invalid layout";
  PAGODA_CHECK(static_cast<int64_t>(tokens.size()) == layout.block_size)
      << "a block record holds " << layout.block_size << " tokens, got " << tokens.size();
  const int64_t header_bytes = HeaderBytes(layout.block_size);
  const size_t start = out->size();
  out->resize(start + static_cast<size_t>(layout.RecordBytes()));
  uint8_t* p = out->data() + start;
  std::memset(p, 0, kBlockFileFixedHeader);
  std::memcpy(p, kMagic, sizeof(kMagic));
  Store(p + kOffVersion, kBlockFileVersion);
  Store(p + kOffHeaderBytes, static_cast<uint32_t>(header_bytes));
  Store(p + kOffFingerprint, layout.model_fingerprint);
  Store(p + kOffLayoutHash, layout.LayoutHash());
  Store(p + kOffType, static_cast<uint32_t>(layout.type));
  Store(p + kOffBlockSize, static_cast<uint32_t>(layout.block_size));
  Store(p + kOffLayers, static_cast<uint32_t>(layout.layers.size()));
  Store(p + kOffHash, hash.lo);
  Store(p + kOffHash + 8, hash.hi);
  Store(p + kOffParent, parent.lo);
  Store(p + kOffParent + 8, parent.hi);
  Store(p + kOffPayloadBytes, static_cast<uint64_t>(layout.block_bytes));
  std::memcpy(p + kBlockFileFixedHeader, tokens.data(), tokens.size_bytes());
  std::memcpy(p + header_bytes, payload, static_cast<size_t>(layout.block_bytes));
  const size_t checked = static_cast<size_t>(header_bytes + layout.block_bytes);
  Store(p + checked, static_cast<uint64_t>(XXH3_64bits(p, checked)));
}

Result<BlockOrigin> PeekBlockOrigin(std::span<const uint8_t> bytes) {
  PAGODA_RETURN_IF_ERROR(CheckMagicAndVersion(bytes));
  const uint8_t* p = bytes.data();
  const uint32_t type = Load<uint32_t>(p + kOffType);
  if (type > static_cast<uint32_t>(kernels::KvType::kInt8)) {
    return InvalidArgument("KV block file: unknown KV type " + std::to_string(type));
  }
  const uint32_t block_size = Load<uint32_t>(p + kOffBlockSize);
  const uint64_t payload_bytes = Load<uint64_t>(p + kOffPayloadBytes);
  if (block_size < 1 || block_size > kMaxBlockSize || payload_bytes < 1 || payload_bytes > (uint64_t{1} << 40)) {
    return InvalidArgument("KV block file: bad block size or payload size");
  }
  BlockOrigin o;
  o.model_fingerprint = Load<uint64_t>(p + kOffFingerprint);
  o.type = static_cast<kernels::KvType>(type);
  o.block_size = static_cast<int32_t>(block_size);
  o.record_bytes = HeaderBytes(block_size) + static_cast<int64_t>(payload_bytes) + 8;
  return o;
}

Result<BlockRecord> DecodeBlockHeader(const BlockLayout& expect, std::span<const uint8_t> bytes) {
  return ParseHeader(expect, bytes);
}

Result<BlockRecord> VerifyBlock(const BlockLayout& expect, std::span<const uint8_t> bytes) {
  PAGODA_ASSIGN_OR_RETURN(BlockRecord rec, ParseHeader(expect, bytes));
  const int64_t record_bytes = expect.RecordBytes();
  if (static_cast<int64_t>(bytes.size()) < record_bytes) {
    return InvalidArgument("KV block file: truncated record (" + std::to_string(bytes.size()) + " of " +
                           std::to_string(record_bytes) + " bytes)");
  }
  const size_t checked = static_cast<size_t>(record_bytes - 8);
  if (XXH3_64bits(bytes.data(), checked) != Load<uint64_t>(bytes.data() + checked)) {
    return DataLoss("KV block file: checksum mismatch");
  }
  return rec;
}

Result<BlockRecord> DecodeBlock(const BlockLayout& expect, std::span<const uint8_t> bytes, void* payload) {
  PAGODA_ASSIGN_OR_RETURN(BlockRecord rec, VerifyBlock(expect, bytes));
  std::memcpy(payload, bytes.data() + HeaderBytes(expect.block_size), static_cast<size_t>(expect.block_bytes));
  return rec;
}

}  // namespace pagoda::kv
