// Golden vLLM KV event batches, shared by the kvevents codec tests and the
// gateway's feed tests. Assembled by hand, byte by byte from the msgpack
// spec, from the struct definitions in vLLM's vllm/distributed/kv_events.py:
//  - current layout (commit 0181ea3173e53eea8cf04a86891488e3dc89bb34):
//    EventBatch(omit_defaults) {ts, events, data_parallel_rank=None};
//    KVCacheEvent(tag=True, omit_defaults): the tag key "type" first, then the
//    fields in declaration order; BlockStored {block_hashes, parent_block_hash,
//    token_ids, block_size, lora_id, medium, lora_name, extra_keys=None,
//    group_idx=None, kv_cache_spec_kind=None, ...}; BlockRemoved
//    {block_hashes, medium, group_idx=None}; AllBlocksCleared {}.
//  - array_like layout (vLLM 0.9 / 0.10: EventBatch and KVCacheEvent with
//    array_like=True): a struct is an array of its fields in order, the tag
//    first; fields at their default are dropped from the end.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace pagoda::kvevents::testing {

inline std::string Bytes(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }
inline std::string Str(const std::string& s) {  // fixstr (< 32 bytes)
  return std::string(1, static_cast<char>(0xa0 | s.size())) + s;
}

// ts = 1700000000.5 is the float64 41 d9 54 fc 40 20 00 00.
inline std::string GoldenTs() { return Bytes({0xcb, 0x41, 0xd9, 0x54, 0xfc, 0x40, 0x20, 0x00, 0x00}); }

// BlockStored, map layout: block_hashes [12345, -7], no parent, token_ids
// 1..8, block_size 4, medium "GPU"; 9 keys (type + 7 fields + group_idx,
// which a newer vLLM sets and Pagoda skips).
inline std::string GoldenMapStoredEvent() {
  std::string s = Bytes({0x89}) + Str("type") + Str("BlockStored");
  s += Str("block_hashes") + Bytes({0x92, 0xcd, 0x30, 0x39, 0xf9});  // [12345, -7]
  s += Str("parent_block_hash") + Bytes({0xc0});                    // nil
  s += Str("token_ids") + Bytes({0x98, 1, 2, 3, 4, 5, 6, 7, 8});
  s += Str("block_size") + Bytes({0x04});
  s += Str("lora_id") + Bytes({0xc0});
  s += Str("medium") + Str("GPU");
  s += Str("lora_name") + Bytes({0xc0});
  s += Str("group_idx") + Bytes({0x00});
  return s;
}

// BlockRemoved with a bytes hash (newer vLLM's sha256 digests; 4 bytes here: de ad be ef).
inline std::string GoldenMapRemovedEvent() {
  std::string s = Bytes({0x83}) + Str("type") + Str("BlockRemoved");
  s += Str("block_hashes") + Bytes({0x91, 0xc4, 0x04, 0xde, 0xad, 0xbe, 0xef});
  s += Str("medium") + Str("GPU");
  return s;
}

inline std::string GoldenMapClearedEvent() { return Bytes({0x81}) + Str("type") + Str("AllBlocksCleared"); }

// A map-layout batch {ts, events, data_parallel_rank: 0} of up to 15 events.
inline std::string MapBatch(const std::vector<std::string>& events) {
  std::string s = Bytes({0x83});  // map of 3
  s += Str("ts") + GoldenTs();
  s += Str("events") + std::string(1, static_cast<char>(0x90 | events.size()));
  for (const std::string& e : events) s += e;
  s += Str("data_parallel_rank") + Bytes({0x00});
  return s;
}

// Stored, removed (a bytes hash), cleared.
inline std::string GoldenMapBatch() {
  return MapBatch({GoldenMapStoredEvent(), GoldenMapRemovedEvent(), GoldenMapClearedEvent()});
}

// [ts, [BlockStored, BlockRemoved], data_parallel_rank 1]: BlockStored
// ["BlockStored", [0xfedcba9876543210], parent -0x123456789,
// [100, 200, 300, 40000], 4, nil, "GPU"]; BlockRemoved
// ["BlockRemoved", [0xfedcba9876543210]] (medium absent: the oldest layout).
inline std::string GoldenArrayBatch() {
  std::string s = Bytes({0x93}) + GoldenTs() + Bytes({0x92});
  s += Bytes({0x97}) + Str("BlockStored");
  s += Bytes({0x91, 0xcf, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10});
  s += Bytes({0xd3, 0xff, 0xff, 0xff, 0xfe, 0xdc, 0xba, 0x98, 0x77});
  s += Bytes({0x94, 0x64, 0xcc, 0xc8, 0xcd, 0x01, 0x2c, 0xcd, 0x9c, 0x40});
  s += Bytes({0x04, 0xc0}) + Str("GPU");
  s += Bytes({0x92}) + Str("BlockRemoved");
  s += Bytes({0x91, 0xcf, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10});
  s += Bytes({0x01});
  return s;
}

}  // namespace pagoda::kvevents::testing
