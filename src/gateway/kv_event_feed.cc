#include "gateway/kv_event_feed.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <variant>

#include "base/log.h"
#include "base/prometheus_text.h"

namespace pagoda::gateway {

std::string EngineHashKey(const kvevents::ExternalBlockHash& h) {
  if (h.is_bytes()) return "b" + h.bytes();
  std::string key(9, '\0');
  key[0] = 'i';
  for (int i = 0; i < 8; ++i) key[1 + i] = static_cast<char>((h.int_value() >> (8 * i)) & 0xff);
  return key;
}

namespace {

std::vector<std::string> Keys(const std::vector<kvevents::ExternalBlockHash>& hashes) {
  std::vector<std::string> out;
  out.reserve(hashes.size());
  for (const auto& h : hashes) out.push_back(EngineHashKey(h));
  return out;
}

// The cache scope a stored chain was salted with: the int extra key Pagoda
// puts on each block (SaltDigest); 0 when none.
uint64_t ScopeDigest(const kvevents::BlockStored& st) {
  if (!st.extra_keys || st.extra_keys->empty() || !st.extra_keys->front()) return 0;
  for (const kvevents::ExtraKey& k : *st.extra_keys->front()) {
    if (k.kind == kvevents::ExtraKey::Kind::kInt) return k.int_value;
  }
  return 0;
}

std::optional<std::string_view> Medium(const std::optional<std::string>& m) {
  return m ? std::optional<std::string_view>(*m) : std::nullopt;
}

}  // namespace

void ApplyKvEventBatch(KvIndex& index, std::string_view replica, const kvevents::EventBatch& batch) {
  for (const kvevents::KvEvent& e : batch.events) {
    if (const auto* st = std::get_if<kvevents::BlockStored>(&e)) {
      std::optional<std::string> parent;
      if (st->parent_block_hash) parent = EngineHashKey(*st->parent_block_hash);
      const std::vector<std::string> keys = Keys(st->block_hashes);
      index.OnStored(replica, parent ? std::optional<std::string_view>(*parent) : std::nullopt, keys, st->token_ids,
                     st->block_size, ScopeDigest(*st), Medium(st->medium));
    } else if (const auto* rm = std::get_if<kvevents::BlockRemoved>(&e)) {
      index.OnRemoved(replica, Keys(rm->block_hashes), Medium(rm->medium));
    } else {
      index.OnCleared(replica);
    }
  }
}

struct KvEventFeed::Source {
  std::string replica, model, endpoint, replay;
  std::shared_ptr<KvIndex> index;
  std::unique_ptr<kvevents::Subscriber> subscriber;
  std::atomic<int64_t> last_seq{-1};
};

KvEventFeed::KvEventFeed() : lag_(BucketHistogram::LatencyBounds()), apply_(BucketHistogram::LatencyBounds()) {}

KvEventFeed::~KvEventFeed() { Stop(); }

void KvEventFeed::OnBatch(Source& source, uint64_t seq, kvevents::EventBatch&& batch) {
  const double received = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto t0 = std::chrono::steady_clock::now();
  ApplyKvEventBatch(*source.index, source.replica, batch);
  apply_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  // Synthetic resets carry no engine time; a clock skewed behind the
  // engine's would read negative: neither is a lag.
  if (batch.ts > 0 && received >= batch.ts) lag_.Observe(received - batch.ts);
  source.last_seq.store(static_cast<int64_t>(seq));
}

void KvEventFeed::Sync(const RoutingTable& table) {
  struct Want {
    std::string replica, model, endpoint, replay;
    std::shared_ptr<KvIndex> index;
  };
  std::vector<Want> want;
  for (const ModelConfig& mc : table.config().models) {
    const ModelRoute* m = table.FindModel(mc.name);
    for (const Deployment& d : m->deployments) {
      for (const auto& r : d.replicas) {
        if (r->config().kv_events.empty()) continue;
        want.push_back({r->id(), mc.name, r->config().kv_events, r->config().kv_events_replay, m->kv_index});
      }
    }
  }
  auto same = [](const Source& s, const Want& w) {
    return s.replica == w.replica && s.endpoint == w.endpoint && s.replay == w.replay && s.index == w.index;
  };
  std::vector<std::unique_ptr<Source>> keep, drop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : sources_) {
      const bool wanted = std::any_of(want.begin(), want.end(), [&](const Want& w) { return same(*s, w); });
      (wanted ? keep : drop).push_back(std::move(s));
    }
    sources_.clear();
  }
  for (auto& s : drop) {
    s->subscriber->Stop();
    // A replica that stays with new endpoints restarts empty and replays.
    s->index->RemoveReplica(s->replica);
  }
  for (const Want& w : want) {
    if (std::any_of(keep.begin(), keep.end(), [&](const auto& s) { return same(*s, w); })) continue;
    auto s = std::make_unique<Source>();
    s->replica = w.replica, s->model = w.model, s->endpoint = w.endpoint, s->replay = w.replay, s->index = w.index;
    kvevents::SubscriberOptions so;
    so.endpoint = w.endpoint;
    so.replay_endpoint = w.replay;
    Source* raw = s.get();
    auto sub = kvevents::Subscriber::Create(so, [this, raw](uint64_t seq, kvevents::EventBatch&& b) {
      OnBatch(*raw, seq, std::move(b));
    });
    if (!sub.ok()) {
      PAGODA_LOG(Warning) << "gateway: KV events of " << w.replica << " not read: " << sub.status().message();
      continue;
    }
    s->subscriber = std::move(sub).value();
    s->subscriber->Start();
    keep.push_back(std::move(s));
  }
  std::lock_guard<std::mutex> lock(mu_);
  sources_ = std::move(keep);
}

void KvEventFeed::Stop() {
  std::vector<std::unique_ptr<Source>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(sources_);
  }
  for (auto& s : all) s->subscriber->Stop();
}

std::vector<KvFeedReplicaStats> KvEventFeed::Stats() const {
  std::vector<KvFeedReplicaStats> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : sources_) {
      out.push_back({s->replica, s->model, s->endpoint, s->subscriber->stats(), s->last_seq.load()});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.replica < b.replica; });
  return out;
}

namespace {

template <typename Row>
void RenderCounterFamily(std::ostream& o, const char* name, const char* type, const char* help,
                         const std::vector<Row>& rows, double (*value)(const Row&),
                         const std::string& (*replica)(const Row&)) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  for (const Row& r : rows) o << name << "{replica=\"" << PromLabel(replica(r)) << "\"} " << PromNumber(value(r)) << "\n";
}

}  // namespace

void RenderKvEventFeedMetrics(std::ostream& o, const KvEventFeed& feed, const RoutingTable& table) {
  using F = KvFeedReplicaStats;
  const std::vector<F> feeds = feed.Stats();
  const auto fid = +[](const F& f) -> const std::string& { return f.replica; };
  const struct {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const F&);
  } feed_rows[] = {
      {"pagoda_gateway_kv_event_batches_total", "counter", "KV event batches applied to the index.",
       [](const F& f) { return static_cast<double>(f.subscriber.applied); }},
      {"pagoda_gateway_kv_event_malformed_total", "counter", "KV event frames or payloads dropped as malformed.",
       [](const F& f) { return static_cast<double>(f.subscriber.malformed); }},
      {"pagoda_gateway_kv_event_gaps_total", "counter", "Live KV event sequence gaps seen.",
       [](const F& f) { return static_cast<double>(f.subscriber.gaps); }},
      {"pagoda_gateway_kv_event_replays_total", "counter", "Replay requests sent to the replica.",
       [](const F& f) { return static_cast<double>(f.subscriber.replays); }},
      {"pagoda_gateway_kv_event_resets_total", "counter",
       "Times the replica's view restarted empty (batches lost for good, or a publisher restart).",
       [](const F& f) { return static_cast<double>(f.subscriber.resets); }},
      {"pagoda_gateway_kv_event_last_seq", "gauge", "Sequence number of the last batch applied (-1: none yet).",
       [](const F& f) { return static_cast<double>(f.last_seq); }},
  };
  for (const auto& r : feed_rows) RenderCounterFamily(o, r.name, r.type, r.help, feeds, r.value, fid);
  using S = KvIndex::ReplicaStats;
  std::vector<S> index;
  for (const ModelConfig& mc : table.config().models) {
    const ModelRoute* m = table.FindModel(mc.name);
    for (S& s : m->kv_index->AllStats()) index.push_back(std::move(s));
  }
  const auto sid = +[](const S& s) -> const std::string& { return s.replica; };
  const struct {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const S&);
  } index_rows[] = {
      {"pagoda_gateway_kv_index_blocks", "gauge", "Blocks the index says the replica holds.",
       [](const S& s) { return static_cast<double>(s.blocks); }},
      {"pagoda_gateway_kv_index_lower_tier_blocks", "gauge",
       "Of those, blocks held only in a lower-tier medium (DISK, REDIS), credited below a block in memory.",
       [](const S& s) { return static_cast<double>(s.lower_tier_only); }},
      {"pagoda_gateway_kv_index_orphans_total", "counter", "Stored events skipped: their parent block was unknown.",
       [](const S& s) { return static_cast<double>(s.orphans); }},
      {"pagoda_gateway_kv_index_malformed_total", "counter", "Stored events skipped: token ids did not fill the blocks.",
       [](const S& s) { return static_cast<double>(s.malformed); }},
      {"pagoda_gateway_kv_index_over_capacity_total", "counter", "Blocks dropped at the per-replica index bound.",
       [](const S& s) { return static_cast<double>(s.over_capacity); }},
  };
  for (const auto& r : index_rows) RenderCounterFamily(o, r.name, r.type, r.help, index, r.value, sid);
  RenderHistogram(o, "pagoda_gateway_kv_event_lag_seconds",
                  "Gateway receive time minus the batch's ts (engine clock): how far the index trails.", feed.lag());
  RenderHistogram(o, "pagoda_gateway_kv_event_apply_seconds", "Time to apply one KV event batch to the index.",
                  feed.apply_time());
}

}  // namespace pagoda::gateway
