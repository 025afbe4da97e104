// The KV event feed: golden vLLM batches (tests/kvevents/golden_batches.h)
// applied to a model's index make cache_aware route a matching request to
// the replica that reported the blocks; live batches from a real
// kvevents::Publisher over loopback ZeroMQ do the same through the feed's
// subscriber; a reload keeps the index (and the running subscriber) for
// replicas that stay and forgets those that leave.
#include "gateway/kv_event_feed.h"

#include <gtest/gtest.h>

#include <numeric>
#include <sstream>
#include <thread>

#include "gateway/block_hasher.h"
#include "gateway/router.h"
#include "kvevents/golden_batches.h"
#include "kvevents/kv_event_codec.h"
#include "kvevents/publisher.h"

namespace pagoda::gateway {
namespace {

using namespace std::chrono_literals;
namespace golden = kvevents::testing;

// Three event-fed replicas of one cache_aware model, block size 4 (the
// golden batches' block size). r1's events come from `r1_pub` / `r1_replay`.
std::string Config(const std::string& r1_pub = "tcp://127.0.0.1:1", const std::string& r1_replay = "",
                   bool with_r1 = true) {
  std::string s = "[[models]]\nname = \"m\"\nblock_size = 4\n[[models.deployments]]\nversion = \"v1\"\n";
  auto replica = [&](const std::string& name, int port, const std::string& pub, const std::string& replay) {
    s += "[[models.deployments.replicas]]\nname = \"" + name + "\"\nurl = \"http://127.0.0.1:" +
         std::to_string(port) + "\"\nkv_events = \"" + pub + "\"\n";
    if (!replay.empty()) s += "kv_events_replay = \"" + replay + "\"\n";
  };
  replica("r0", 1001, "tcp://127.0.0.1:2", "");
  if (with_r1) replica("r1", 1002, r1_pub, r1_replay);
  replica("r2", 1003, "tcp://127.0.0.1:3", "");
  return s;
}

std::shared_ptr<RoutingTable> Table(const std::string& toml, const RoutingTable* previous = nullptr) {
  auto c = ParseGatewayConfig(toml);
  EXPECT_TRUE(c.ok()) << c.status().message();
  auto t = RoutingTable::Build(*c, previous, [](const std::string&) { return std::nullopt; });
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : nullptr;
}

kvevents::EventBatch Decode(const std::string& bytes) {
  auto b = kvevents::DecodeBatch(bytes);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? *b : kvevents::EventBatch{};
}

std::vector<int32_t> Iota(int from, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

// The replica a chat request with these prompt tokens goes to, and the prediction.
std::pair<std::string, int64_t> RouteTokens(const RoutingTable& table, const std::vector<int32_t>& tokens) {
  RouteRequest req;
  req.model = "m";
  req.tokens = tokens;
  req.prompt_tokens = static_cast<int64_t>(tokens.size());
  auto d = Route(table, req, std::chrono::steady_clock::now());
  EXPECT_TRUE(d.ok());
  return d.ok() ? std::pair{d->replica->id(), d->predicted_cached_tokens} : std::pair{std::string(), int64_t{-1}};
}

TEST(KvEventFeedTest, EngineHashKeysKeepIntsAndBytesApart) {
  const auto i = EngineHashKey(kvevents::ExternalBlockHash::FromInt(0x0102030405060708ull));
  EXPECT_EQ(i, std::string("i\x08\x07\x06\x05\x04\x03\x02\x01", 9));
  const auto b = EngineHashKey(kvevents::ExternalBlockHash::FromBytes("\x08\x07\x06\x05\x04\x03\x02\x01"));
  EXPECT_EQ(b, "b\x08\x07\x06\x05\x04\x03\x02\x01");
  EXPECT_NE(i, b);
}

TEST(KvEventFeedTest, GoldenStoredBatchRoutesAMatchingRequestToThatReplica) {
  auto table = Table(Config());
  const ModelRoute* m = table->FindModel("m");
  ASSERT_NE(m, nullptr);
  ApplyKvEventBatch(*m->kv_index, "r1", Decode(golden::MapBatch({golden::GoldenMapStoredEvent()})));
  const auto st = m->kv_index->Stats("r1");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->blocks, 2u);
  // The golden event stores tokens 1..8 in two blocks of 4. A prompt of
  // 1..9 reuses both (the engine computes the last token itself).
  EXPECT_EQ(RouteTokens(*table, Iota(1, 9)), (std::pair<std::string, int64_t>{"r1", 8}));
  // A prompt of exactly 1..8 may reuse only the first block.
  EXPECT_EQ(RouteTokens(*table, Iota(1, 8)).second, 4);
  // Another prefix matches nothing anywhere.
  EXPECT_EQ(RouteTokens(*table, Iota(2, 9)).second, 0);
}

TEST(KvEventFeedTest, GoldenMapBatchStoresRemovesAndEndsCleared) {
  KvIndex index;
  ApplyKvEventBatch(index, "r", Decode(golden::GoldenMapBatch()));
  const auto st = index.Stats("r");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->stored, 2);
  EXPECT_EQ(st->unknown_removed, 1);  // the bytes hash de ad be ef was never stored
  EXPECT_EQ(st->cleared, 1);
  EXPECT_EQ(st->blocks, 0u);
}

TEST(KvEventFeedTest, GoldenArrayBatchWithAnUnknownParentIsAnOrphan) {
  KvIndex index;
  ApplyKvEventBatch(index, "r", Decode(golden::GoldenArrayBatch()));
  const auto st = index.Stats("r");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->orphans, 1);
  EXPECT_EQ(st->blocks, 0u);
  EXPECT_EQ(st->unknown_removed, 1);
}

TEST(KvEventFeedTest, ChildBlocksChainOnTheirParentsEngineHash) {
  // A second batch continues the golden chain: parent -7 (an int hash).
  KvIndex index;
  ApplyKvEventBatch(index, "r", Decode(golden::MapBatch({golden::GoldenMapStoredEvent()})));
  kvevents::EventBatch child;
  kvevents::BlockStored st;
  st.block_hashes = {kvevents::ExternalBlockHash::FromBytes("child")};
  st.parent_block_hash = kvevents::ExternalBlockHash::FromInt(static_cast<uint64_t>(int64_t{-7}));
  st.token_ids = {9, 10, 11, 12};
  st.block_size = 4;
  child.events.push_back(st);
  ApplyKvEventBatch(index, "r", child);
  const auto chain = ChainedBlockHashes(Iota(1, 12), 4);
  EXPECT_EQ(index.MatchedBlocks("r", chain), 3u);
}

// Publishes `batch`, then empty batches until `done` (the first may be lost
// to ZeroMQ's slow join; the subscriber's gap replay brings it back).
bool PublishUntil(kvevents::Publisher& pub, kvevents::EventBatch batch, const std::function<bool()>& done) {
  pub.Publish(std::move(batch));
  for (int i = 0; i < 250; ++i) {
    if (done()) return true;
    kvevents::EventBatch tick;
    tick.ts = 1;
    pub.Publish(tick);
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

TEST(KvEventFeedTest, LiveEventsReachTheIndexAndReloadKeepsIt) {
  kvevents::PublisherOptions po;
  po.endpoint = "tcp://127.0.0.1:*";
  po.replay_endpoint = "tcp://127.0.0.1:*";
  auto pub = kvevents::Publisher::Create(po);
  ASSERT_TRUE(pub.ok()) << pub.status().message();
  const std::string toml = Config((*pub)->endpoint(), (*pub)->replay_endpoint());
  auto t1 = Table(toml);
  KvEventFeed feed;
  feed.Sync(*t1);
  const auto index = t1->FindModel("m")->kv_index;
  kvevents::EventBatch stored = Decode(golden::MapBatch({golden::GoldenMapStoredEvent()}));
  stored.ts = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_TRUE(PublishUntil(**pub, stored, [&] { return index->MatchedBlocks("r1", ChainedBlockHashes(Iota(1, 8), 4)) == 2; }));
  EXPECT_EQ(RouteTokens(*t1, Iota(1, 9)), (std::pair<std::string, int64_t>{"r1", 8}));
  EXPECT_GE(feed.lag().count, 1u);
  EXPECT_GE(feed.apply_time().count, 1u);

  auto r1_stats = [&]() -> KvFeedReplicaStats {
    for (const auto& s : feed.Stats()) {
      if (s.replica == "r1") return s;
    }
    return {};
  };
  const KvFeedReplicaStats before = r1_stats();
  EXPECT_GE(before.last_seq, 0);
  EXPECT_GE(before.subscriber.applied, 1);

  // Reload with the same replicas: the same index, the same subscriber (its
  // counters run on), the same routing.
  auto t2 = Table(toml, t1.get());
  feed.Sync(*t2);
  EXPECT_EQ(t2->FindModel("m")->kv_index, index);
  EXPECT_GE(r1_stats().subscriber.applied, before.subscriber.applied);
  EXPECT_EQ(RouteTokens(*t2, Iota(1, 9)), (std::pair<std::string, int64_t>{"r1", 8}));

  // Metrics name the feed's and the index's figures per replica.
  std::ostringstream page;
  RenderKvEventFeedMetrics(page, feed, *t2);
  EXPECT_NE(page.str().find("pagoda_gateway_kv_index_blocks{replica=\"r1\"} 2\n"), std::string::npos) << page.str();
  EXPECT_NE(page.str().find("pagoda_gateway_kv_event_last_seq{replica=\"r1\"} "), std::string::npos);
  EXPECT_NE(page.str().find("pagoda_gateway_kv_event_lag_seconds_count "), std::string::npos);

  // r1 leaves: its subscriber stops and the index forgets it.
  auto t3 = Table(Config("", "", /*with_r1=*/false), t2.get());
  feed.Sync(*t3);
  EXPECT_FALSE(index->Stats("r1").has_value());
  for (const auto& s : feed.Stats()) EXPECT_NE(s.replica, "r1");
  EXPECT_EQ(RouteTokens(*t3, Iota(1, 9)).second, 0);
  feed.Stop();
}

TEST(KvEventFeedTest, AReloadThatIsRefusedForgetsNothing) {
  auto t1 = Table(Config());
  const auto index = t1->FindModel("m")->kv_index;
  ApplyKvEventBatch(*index, "r1", Decode(golden::MapBatch({golden::GoldenMapStoredEvent()})));
  // r1 leaves, but the config also names an upstream whose key is unset: refused.
  auto c = ParseGatewayConfig(Config("", "", false) +
                              "[[upstreams]]\nname = \"ext\"\nurl = \"http://127.0.0.1:9/v1\"\napi_key_env = \"UNSET\"\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto t2 = RoutingTable::Build(*c, t1.get(), [](const std::string&) { return std::nullopt; });
  EXPECT_FALSE(t2.ok());
  EXPECT_TRUE(index->Stats("r1").has_value());
  EXPECT_EQ(RouteTokens(*t1, Iota(1, 9)), (std::pair<std::string, int64_t>{"r1", 8}));
}

}  // namespace
}  // namespace pagoda::gateway

namespace pagoda::gateway {
namespace {

// A chain stored under a cache salt carries SaltDigest(salt) in its extra
// keys: the index files it under that scope, where only a request chained
// with the same scope meets it.
TEST(KvEventFeedTest, SaltedChainsAreIndexedUnderTheirScope) {
  KvIndex index;
  kvevents::BlockStored st;
  st.block_size = 4;
  st.token_ids = {1, 2, 3, 4, 5, 6, 7, 8};
  st.block_hashes = {kvevents::ExternalBlockHash::FromInt(11), kvevents::ExternalBlockHash::FromInt(12)};
  const uint64_t digest = kvevents::SaltDigest("t:acme/k:key_1");
  st.extra_keys = std::vector<kvevents::BlockExtraKeys>(2, std::vector<kvevents::ExtraKey>{kvevents::ExtraKey::Int(digest)});
  kvevents::EventBatch batch;
  batch.events.push_back(st);
  ApplyKvEventBatch(index, "r", batch);
  const std::vector<int32_t> t = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(index.MatchedBlocks("r", ChainedBlockHashes(t, 4, ScopedRoot(index.salt(), digest))), 2u);
  EXPECT_EQ(index.MatchedBlocks("r", ChainedBlockHashes(t, 4, index.salt())), 0u);
  EXPECT_EQ(index.MatchedBlocks("r", ChainedBlockHashes(t, 4, ScopedRoot(index.salt(), digest + 1))), 0u);
}

}  // namespace
}  // namespace pagoda::gateway
