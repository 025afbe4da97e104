#include "kvevents/kv_event_codec.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>

#include <msgpack.hpp>

namespace pagoda::kvevents {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

// ---- encoding ---------------------------------------------------------------

void PackStr(Packer& p, std::string_view s) {
  p.pack_str(static_cast<uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void PackHash(Packer& p, const ExternalBlockHash& h) {
  if (h.is_bytes()) {
    p.pack_bin(static_cast<uint32_t>(h.bytes().size()));
    p.pack_bin_body(h.bytes().data(), static_cast<uint32_t>(h.bytes().size()));
  } else {
    p.pack_uint64(h.int_value());
  }
}

void PackHashes(Packer& p, const std::vector<ExternalBlockHash>& hashes) {
  p.pack_array(static_cast<uint32_t>(hashes.size()));
  for (const ExternalBlockHash& h : hashes) PackHash(p, h);
}

void PackOptStr(Packer& p, const std::optional<std::string>& s) {
  if (s) {
    PackStr(p, *s);
  } else {
    p.pack_nil();
  }
}

void PackExtraKey(Packer& p, const ExtraKey& k) {
  switch (k.kind) {
    case ExtraKey::Kind::kInt: p.pack_uint64(k.int_value); break;
    case ExtraKey::Kind::kStr: PackStr(p, k.text); break;
    case ExtraKey::Kind::kBytes:
      p.pack_bin(static_cast<uint32_t>(k.text.size()));
      p.pack_bin_body(k.text.data(), static_cast<uint32_t>(k.text.size()));
      break;
  }
}

void PackEvent(Packer& p, const BlockStored& e) {
  p.pack_map(e.extra_keys ? 9 : 8);
  PackStr(p, "type");
  PackStr(p, "BlockStored");
  PackStr(p, "block_hashes");
  PackHashes(p, e.block_hashes);
  PackStr(p, "parent_block_hash");
  if (e.parent_block_hash) {
    PackHash(p, *e.parent_block_hash);
  } else {
    p.pack_nil();
  }
  PackStr(p, "token_ids");
  p.pack_array(static_cast<uint32_t>(e.token_ids.size()));
  for (int32_t t : e.token_ids) p.pack_int32(t);
  PackStr(p, "block_size");
  p.pack_int32(e.block_size);
  PackStr(p, "lora_id");
  if (e.lora_id) {
    p.pack_int64(*e.lora_id);
  } else {
    p.pack_nil();
  }
  PackStr(p, "medium");
  PackOptStr(p, e.medium);
  PackStr(p, "lora_name");
  PackOptStr(p, e.lora_name);
  if (e.extra_keys) {  // omit_defaults: absent when None
    PackStr(p, "extra_keys");
    p.pack_array(static_cast<uint32_t>(e.extra_keys->size()));
    for (const BlockExtraKeys& block : *e.extra_keys) {
      if (!block) {
        p.pack_nil();
        continue;
      }
      p.pack_array(static_cast<uint32_t>(block->size()));
      for (const ExtraKey& k : *block) PackExtraKey(p, k);
    }
  }
}

void PackEvent(Packer& p, const BlockRemoved& e) {
  p.pack_map(3);
  PackStr(p, "type");
  PackStr(p, "BlockRemoved");
  PackStr(p, "block_hashes");
  PackHashes(p, e.block_hashes);
  PackStr(p, "medium");
  PackOptStr(p, e.medium);
}

void PackEvent(Packer& p, const AllBlocksCleared&) {
  p.pack_map(1);
  PackStr(p, "type");
  PackStr(p, "AllBlocksCleared");
}

// ---- bounds pre-pass ----------------------------------------------------------

// Walks the payload without building anything and refuses nesting past
// kMaxDepth and containers that declare more elements than the payload has
// bytes (every element takes at least one), so the tree msgpack::unpack
// builds afterwards is bounded by a small multiple of the payload.
struct BoundsVisitor : msgpack::null_visitor {
  explicit BoundsVisitor(uint64_t budget) : budget_(budget) {}
  bool Open(uint64_t elements) {
    if (++depth_ > kMaxDepth) return false;
    pending_ += elements;
    return pending_ <= budget_;
  }
  bool start_array(uint32_t n) { return Open(n); }
  bool end_array_item() { return --pending_, true; }
  bool end_array() { return --depth_, true; }
  bool start_map(uint32_t n) { return Open(uint64_t{n} * 2); }
  bool end_map_key() { return --pending_, true; }
  bool end_map_value() { return --pending_, true; }
  bool end_map() { return --depth_, true; }

  uint64_t budget_;
  uint64_t pending_ = 0;
  int depth_ = 0;
};

Status CheckBounds(std::string_view payload) {
  BoundsVisitor v(payload.size());
  size_t off = 0;
  bool ok = false;
  try {
    ok = msgpack::parse(payload.data(), payload.size(), off, v);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("KV event batch: not msgpack (") + e.what() + ")");
  }
  if (v.depth_ > kMaxDepth) return InvalidArgument("KV event batch: nested deeper than " + std::to_string(kMaxDepth));
  if (v.pending_ > v.budget_) return InvalidArgument("KV event batch: a container declares more elements than the payload holds");
  if (!ok) return InvalidArgument("KV event batch: truncated or not msgpack");
  if (off != payload.size()) {
    return InvalidArgument("KV event batch: " + std::to_string(payload.size() - off) + " bytes after the batch");
  }
  return Status::Ok();
}

// ---- decoding ---------------------------------------------------------------

Status Bad(const std::string& what) { return InvalidArgument("KV event batch: " + what); }

std::string_view StrOf(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

// A struct's fields by name (map layout) or by position (array_like layout).
class Fields {
 public:
  explicit Fields(const msgpack::object& o) : o_(o) {}
  const msgpack::object* Get(std::string_view name, uint32_t index) const {
    if (o_.type == msgpack::type::ARRAY) return index < o_.via.array.size ? &o_.via.array.ptr[index] : nullptr;
    for (uint32_t i = 0; i < o_.via.map.size; ++i) {
      const msgpack::object_kv& kv = o_.via.map.ptr[i];
      if (kv.key.type == msgpack::type::STR && StrOf(kv.key) == name) return &kv.val;
    }
    return nullptr;
  }

 private:
  const msgpack::object& o_;
};

bool IsNil(const msgpack::object* o) { return o == nullptr || o->type == msgpack::type::NIL; }

Result<int64_t> IntOf(const msgpack::object* o, const char* what, int64_t lo, int64_t hi) {
  if (o == nullptr) return Bad(std::string("missing ") + what);
  int64_t v = 0;
  if (o->type == msgpack::type::POSITIVE_INTEGER) {
    if (o->via.u64 > static_cast<uint64_t>(hi)) return Bad(std::string(what) + " out of range");
    v = static_cast<int64_t>(o->via.u64);
  } else if (o->type == msgpack::type::NEGATIVE_INTEGER) {
    v = o->via.i64;
  } else {
    return Bad(std::string(what) + " is not an integer");
  }
  if (v < lo || v > hi) return Bad(std::string(what) + " out of range");
  return v;
}

Result<ExternalBlockHash> HashOf(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::POSITIVE_INTEGER: return ExternalBlockHash::FromInt(o.via.u64);
    case msgpack::type::NEGATIVE_INTEGER: return ExternalBlockHash::FromInt(static_cast<uint64_t>(o.via.i64));
    case msgpack::type::BIN: return ExternalBlockHash::FromBytes(std::string(o.via.bin.ptr, o.via.bin.size));
    default: return Bad("a block hash is neither an integer nor bytes");
  }
}

Result<std::vector<ExternalBlockHash>> HashesOf(const msgpack::object* o) {
  if (o == nullptr || o->type != msgpack::type::ARRAY) return Bad("block_hashes is not an array");
  std::vector<ExternalBlockHash> out;
  out.reserve(o->via.array.size);
  for (uint32_t i = 0; i < o->via.array.size; ++i) {
    PAGODA_ASSIGN_OR_RETURN(ExternalBlockHash h, HashOf(o->via.array.ptr[i]));
    out.push_back(std::move(h));
  }
  return out;
}

Result<std::optional<std::string>> OptStrOf(const msgpack::object* o, const char* what) {
  if (IsNil(o)) return std::optional<std::string>();
  if (o->type != msgpack::type::STR) return Bad(std::string(what) + " is not a string");
  return std::optional<std::string>(std::string(StrOf(*o)));
}

Result<std::vector<int32_t>> TokensOf(const msgpack::object* o) {
  if (o == nullptr || o->type != msgpack::type::ARRAY) return Bad("token_ids is not an array");
  std::vector<int32_t> out;
  out.reserve(o->via.array.size);
  for (uint32_t i = 0; i < o->via.array.size; ++i) {
    PAGODA_ASSIGN_OR_RETURN(int64_t t, IntOf(&o->via.array.ptr[i], "a token id", 0, std::numeric_limits<int32_t>::max()));
    out.push_back(static_cast<int32_t>(t));
  }
  return out;
}

// vLLM's extra_keys: nil, or per block nil or a tuple (array). Ints, strings
// and bytes are kept; other elements (floats, nested tuples) are skipped:
// Pagoda's own keys are ints.
Result<std::optional<std::vector<BlockExtraKeys>>> ExtraKeysOf(const msgpack::object* o, size_t n_blocks) {
  if (IsNil(o)) return std::optional<std::vector<BlockExtraKeys>>();
  if (o->type != msgpack::type::ARRAY) return Bad("extra_keys is not an array");
  if (o->via.array.size != n_blocks) {
    return Bad("extra_keys has " + std::to_string(o->via.array.size) + " entries for " + std::to_string(n_blocks) +
               " blocks");
  }
  std::vector<BlockExtraKeys> out;
  out.reserve(n_blocks);
  for (uint32_t i = 0; i < o->via.array.size; ++i) {
    const msgpack::object& b = o->via.array.ptr[i];
    if (b.type == msgpack::type::NIL) {
      out.emplace_back();
      continue;
    }
    if (b.type != msgpack::type::ARRAY) return Bad("an extra_keys entry is neither nil nor an array");
    std::vector<ExtraKey> keys;
    for (uint32_t j = 0; j < b.via.array.size; ++j) {
      const msgpack::object& k = b.via.array.ptr[j];
      switch (k.type) {
        case msgpack::type::POSITIVE_INTEGER: keys.push_back(ExtraKey::Int(k.via.u64)); break;
        case msgpack::type::NEGATIVE_INTEGER: keys.push_back(ExtraKey::Int(static_cast<uint64_t>(k.via.i64))); break;
        case msgpack::type::STR: keys.push_back(ExtraKey::Str(std::string(StrOf(k)))); break;
        case msgpack::type::BIN: keys.push_back(ExtraKey::Bytes(std::string(k.via.bin.ptr, k.via.bin.size))); break;
        default: break;
      }
    }
    out.emplace_back(std::move(keys));
  }
  return std::optional<std::vector<BlockExtraKeys>>(std::move(out));
}

Result<BlockStored> StoredOf(const Fields& f) {
  BlockStored e;
  PAGODA_ASSIGN_OR_RETURN(e.block_hashes, HashesOf(f.Get("block_hashes", 1)));
  if (const msgpack::object* p = f.Get("parent_block_hash", 2); !IsNil(p)) {
    PAGODA_ASSIGN_OR_RETURN(ExternalBlockHash h, HashOf(*p));
    e.parent_block_hash = std::move(h);
  }
  PAGODA_ASSIGN_OR_RETURN(e.token_ids, TokensOf(f.Get("token_ids", 3)));
  PAGODA_ASSIGN_OR_RETURN(int64_t bs, IntOf(f.Get("block_size", 4), "block_size", 1, std::numeric_limits<int32_t>::max()));
  e.block_size = static_cast<int32_t>(bs);
  if (e.token_ids.size() != e.block_hashes.size() * static_cast<uint64_t>(bs)) {
    return Bad("BlockStored has " + std::to_string(e.token_ids.size()) + " token ids for " +
               std::to_string(e.block_hashes.size()) + " blocks of " + std::to_string(bs));
  }
  if (const msgpack::object* l = f.Get("lora_id", 5); !IsNil(l)) {
    PAGODA_ASSIGN_OR_RETURN(int64_t id, IntOf(l, "lora_id", std::numeric_limits<int64_t>::min(),
                                              std::numeric_limits<int64_t>::max()));
    e.lora_id = id;
  }
  PAGODA_ASSIGN_OR_RETURN(e.medium, OptStrOf(f.Get("medium", 6), "medium"));
  PAGODA_ASSIGN_OR_RETURN(e.lora_name, OptStrOf(f.Get("lora_name", 7), "lora_name"));
  PAGODA_ASSIGN_OR_RETURN(e.extra_keys, ExtraKeysOf(f.Get("extra_keys", 8), e.block_hashes.size()));
  return e;
}

// nullopt: an event type this reader does not know (skipped).
Result<std::optional<KvEvent>> EventOf(const msgpack::object& o) {
  const msgpack::object* tag = nullptr;
  if (o.type == msgpack::type::MAP) {
    tag = Fields(o).Get("type", 0);
  } else if (o.type == msgpack::type::ARRAY) {
    tag = o.via.array.size > 0 ? &o.via.array.ptr[0] : nullptr;
  } else {
    return Bad("an event is neither a map nor an array");
  }
  if (tag == nullptr || tag->type != msgpack::type::STR) return Bad("an event has no type tag");
  const Fields f(o);
  const std::string_view type = StrOf(*tag);
  if (type == "BlockStored") {
    PAGODA_ASSIGN_OR_RETURN(BlockStored e, StoredOf(f));
    return std::optional<KvEvent>(std::move(e));
  }
  if (type == "BlockRemoved") {
    BlockRemoved e;
    PAGODA_ASSIGN_OR_RETURN(e.block_hashes, HashesOf(f.Get("block_hashes", 1)));
    PAGODA_ASSIGN_OR_RETURN(e.medium, OptStrOf(f.Get("medium", 2), "medium"));
    return std::optional<KvEvent>(std::move(e));
  }
  if (type == "AllBlocksCleared") return std::optional<KvEvent>(AllBlocksCleared{});
  return std::optional<KvEvent>();
}

Result<EventBatch> BatchOf(const msgpack::object& o) {
  if (o.type != msgpack::type::MAP && o.type != msgpack::type::ARRAY) return Bad("the batch is neither a map nor an array");
  const Fields f(o);
  EventBatch b;
  const msgpack::object* ts = f.Get("ts", 0);
  if (ts == nullptr) return Bad("missing ts");
  if (ts->type == msgpack::type::FLOAT32 || ts->type == msgpack::type::FLOAT64) {
    b.ts = ts->via.f64;
  } else if (ts->type == msgpack::type::POSITIVE_INTEGER) {
    b.ts = static_cast<double>(ts->via.u64);
  } else if (ts->type == msgpack::type::NEGATIVE_INTEGER) {
    b.ts = static_cast<double>(ts->via.i64);
  } else {
    return Bad("ts is not a number");
  }
  if (!std::isfinite(b.ts)) return Bad("ts is not finite");
  const msgpack::object* events = f.Get("events", 1);
  if (events == nullptr || events->type != msgpack::type::ARRAY) return Bad("events is not an array");
  b.events.reserve(events->via.array.size);
  for (uint32_t i = 0; i < events->via.array.size; ++i) {
    PAGODA_ASSIGN_OR_RETURN(std::optional<KvEvent> e, EventOf(events->via.array.ptr[i]));
    if (e) b.events.push_back(std::move(*e));
  }
  if (const msgpack::object* dp = f.Get("data_parallel_rank", 2); !IsNil(dp)) {
    PAGODA_ASSIGN_OR_RETURN(int64_t r, IntOf(dp, "data_parallel_rank", 0, std::numeric_limits<int32_t>::max()));
    b.data_parallel_rank = static_cast<int32_t>(r);
  }
  return b;
}

}  // namespace

std::string EncodeBatch(const EventBatch& batch) {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(batch.data_parallel_rank ? 3 : 2);
  PackStr(p, "ts");
  p.pack_double(batch.ts);
  PackStr(p, "events");
  p.pack_array(static_cast<uint32_t>(batch.events.size()));
  for (const KvEvent& e : batch.events) std::visit([&](const auto& ev) { PackEvent(p, ev); }, e);
  if (batch.data_parallel_rank) {
    PackStr(p, "data_parallel_rank");
    p.pack_int32(*batch.data_parallel_rank);
  }
  return std::string(buf.data(), buf.size());
}

Result<EventBatch> DecodeBatch(std::string_view payload) {
  PAGODA_RETURN_IF_ERROR(CheckBounds(payload));
  const size_t n = payload.size();
  const msgpack::unpack_limit limit(n, n, n, n, n, kMaxDepth);
  try {
    const msgpack::object_handle oh = msgpack::unpack(payload.data(), n, nullptr, nullptr, limit);
    return BatchOf(oh.get());
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("KV event batch: not msgpack (") + e.what() + ")");
  }
}

}  // namespace pagoda::kvevents
