// KvEventFeed: the KV events of every replica whose config names
// `kv_events` (a Pagoda `serve --kv-events`, or vLLM with
// --kv-events-config), each read by one kvevents::Subscriber (with
// `kv_events_replay`: late join, gap replay, restart detection) and applied
// batch by batch to the replica's model's KvIndex (routing_table.h):
//   BlockStored -> KvIndex::OnStored, BlockRemoved -> OnRemoved,
//   AllBlocksCleared (including the subscriber's synthetic resets) -> OnCleared.
// The engine's block hashes (vLLM's ExternalBlockHash, an int or bytes) become
// KvIndex's opaque keys by EngineHashKey.
//
// Sync(table) after every table install: subscribers for replicas that stay
// with the same endpoints and the same index run on; new ones start; those
// of replicas that left stop, and their blocks are forgotten.
//
// Threads: Sync / Stop from one controlling thread at a time; Stats and the
// histograms from any thread; each subscriber applies on its own thread.
#pragma once

#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/histogram.h"
#include "gateway/kv_index.h"
#include "gateway/routing_table.h"
#include "kvevents/kv_event.h"
#include "kvevents/subscriber.h"

namespace pagoda::gateway {

// The KvIndex key of an engine block hash: 'i' + 8 bytes (little-endian) for
// ints, 'b' + the bytes for bytes hashes (so the two never collide).
std::string EngineHashKey(const kvevents::ExternalBlockHash& h);

// Applies `batch` (one replica's, in sequence order) to `index`.
void ApplyKvEventBatch(KvIndex& index, std::string_view replica, const kvevents::EventBatch& batch);

struct KvFeedReplicaStats {
  std::string replica;
  std::string model;
  std::string endpoint;
  kvevents::SubscriberStats subscriber;
  int64_t last_seq = -1;  // the last batch applied; -1 before the first
};

class KvEventFeed {
 public:
  KvEventFeed();
  ~KvEventFeed();  // Stop()
  KvEventFeed(const KvEventFeed&) = delete;
  KvEventFeed& operator=(const KvEventFeed&) = delete;

  void Sync(const RoutingTable& table);
  void Stop();

  std::vector<KvFeedReplicaStats> Stats() const;  // sorted by replica
  // Gateway receive time (wall clock) minus the batch's ts: how far the index
  // trails the engine. Replayed batches are old by construction and show as
  // long lags.
  BucketHistogram::Snapshot lag() const { return lag_.snapshot(); }
  // Time to apply one batch to the index.
  BucketHistogram::Snapshot apply_time() const { return apply_.snapshot(); }

 private:
  struct Source;
  void OnBatch(Source& source, uint64_t seq, kvevents::EventBatch&& batch);

  mutable std::mutex mu_;                        // guards sources_ (not the subscribers' callbacks)
  std::vector<std::unique_ptr<Source>> sources_;
  BucketHistogram lag_;
  BucketHistogram apply_;
};

// The feed's and the indexes' figures in the text exposition format
// (pagoda_gateway_kv_event_* and pagoda_gateway_kv_index_*, docs/GATEWAY.md).
void RenderKvEventFeedMetrics(std::ostream& o, const KvEventFeed& feed, const RoutingTable& table);

}  // namespace pagoda::gateway
