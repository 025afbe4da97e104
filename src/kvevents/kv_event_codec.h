// The msgpack wire form of an EventBatch, as vLLM's ZmqEventPublisher sends
// it (msgspec, vllm/distributed/kv_events.py; docs/KV_EVENTS.md).
//
// EncodeBatch writes the current vLLM layout: structs as maps, events tagged
// by a "type" key naming the class, fields at their defaults omitted
// (omit_defaults=True: data_parallel_rank and extra_keys when unset; lora_id,
// medium and lora_name have no default in vLLM and are always written, nil
// when unset).
//
// DecodeBatch reads that layout and the older array_like one (structs as
// arrays in field order, an event's tag first), the batch and each event
// independently; block hashes as ints (either sign) or bin; unknown keys,
// trailing array fields and unknown event types are skipped (a newer vLLM's
// group_idx, ...). extra_keys is read (nil, or one nil-or-array entry per
// block; int, str and bin elements kept, others skipped). Anything else malformed, truncated, nested
// deeper than kMaxDepth or declaring more elements than the payload could
// hold is an InvalidArgument, never a crash or an allocation beyond a small
// multiple of the payload. Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "kvevents/kv_event.h"

namespace pagoda::kvevents {

inline constexpr int kMaxDepth = 32;

std::string EncodeBatch(const EventBatch& batch);
Result<EventBatch> DecodeBatch(std::string_view payload);

}  // namespace pagoda::kvevents
