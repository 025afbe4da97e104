// The KV events the engine emits, checked against an independent account:
// each request's blocks hashed here with kv::BlockHasher (the published
// byte-level contract of kv/block_hash.h) over the tokens the request really
// held (prompt, then what it generated), and the prefix cache's own contents.
// Real requests through the engine on stories260K with a KV pool small
// enough that later requests evict earlier blocks.
#include "engine/kv_event_collector.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "engine/engine.h"
#include "kv/block_hash.h"
#include "kvevents/kv_event_codec.h"
#include "support/loaded_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

constexpr int32_t kBlock = 16;

struct RefBlock {
  kv::BlockHash hash;
  std::vector<int32_t> tokens;
  std::optional<uint64_t> parent;  // nullopt: the chain's first block
};

// The chain of full blocks over `tokens`, keyed by the low 64 bits.
void AddChain(const std::vector<int32_t>& tokens, std::map<uint64_t, RefBlock>& ref) {
  kv::BlockHasher hasher(kBlock);
  kv::BlockHash parent = hasher.Root("");
  std::optional<uint64_t> parent_lo;
  for (size_t i = 0; i + kBlock <= tokens.size(); i += kBlock) {
    std::vector<int32_t> block(tokens.begin() + i, tokens.begin() + i + kBlock);
    const kv::BlockHash h = hasher.Next(parent, block);
    ref[h.lo] = RefBlock{h, block, parent_lo};
    parent = h;
    parent_lo = h.lo;
  }
}

class KvEventCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
    l_ = testing::LoadModelAndTokenizer(testing::TestDataPath("stories260K.gguf"), 2);
    ASSERT_TRUE(l_.model);
  }

  // Applies the batches received so far to alive_, checking each event.
  void Apply() {
    for (; applied_ < batches_.size(); ++applied_) {
      for (const kvevents::KvEvent& ev : batches_[applied_].events) {
        if (const auto* st = std::get_if<kvevents::BlockStored>(&ev)) {
          CheckStored(*st);
        } else if (const auto* rm = std::get_if<kvevents::BlockRemoved>(&ev)) {
          for (const auto& h : rm->block_hashes) {
            EXPECT_EQ(alive_.erase(h.int_value()), 1u) << "removed a block that was not alive";
            ++removed_;
          }
        } else {
          alive_.clear();
        }
      }
    }
  }

  void CheckStored(const kvevents::BlockStored& st) {
    EXPECT_EQ(st.block_size, kBlock);
    EXPECT_EQ(st.medium, "CPU");
    ASSERT_EQ(st.token_ids.size(), st.block_hashes.size() * kBlock);
    std::optional<uint64_t> parent;
    if (st.parent_block_hash) parent = st.parent_block_hash->int_value();
    for (size_t i = 0; i < st.block_hashes.size(); ++i) {
      const uint64_t h = st.block_hashes[i].int_value();
      auto it = ref_.find(h);
      ASSERT_NE(it, ref_.end()) << "stored block " << i << " is no block of any request's tokens";
      EXPECT_EQ(std::vector<int32_t>(st.token_ids.begin() + i * kBlock, st.token_ids.begin() + (i + 1) * kBlock),
                it->second.tokens);
      EXPECT_EQ(parent, it->second.parent) << "chain parent of block " << i;
      EXPECT_TRUE(alive_.insert(h).second) << "stored twice without a removal";
      parent = h;
    }
  }

  // The blocks alive per the events are exactly the prefix cache's.
  void ExpectAliveMatchesCache(const Engine& e) {
    const kv::PrefixCache& pc = e.kv_cache().prefix_cache();
    EXPECT_EQ(static_cast<int32_t>(alive_.size()), pc.n_registered());
    for (uint64_t h : alive_) EXPECT_NE(pc.Find(ref_.at(h).hash), kv::kNoBlock);
  }

  testing::LoadedModel l_;
  std::vector<kvevents::EventBatch> batches_;
  size_t applied_ = 0;
  std::set<uint64_t> alive_;
  std::map<uint64_t, RefBlock> ref_;
  int removed_ = 0;
};

TEST_F(KvEventCollectorTest, EventsTrackThePrefixCacheThroughEvictions) {
  EngineOptions o;
  o.n_ctx = 128;
  o.max_running = 1;
  o.block_size = kBlock;
  o.kv_type = KvType::kF32;
  o.kv_memory_bytes = 12 * PagedKvCache::BlockBytes(l_.model->kv_cache_spec(), o.kv_type, kBlock);
  o.kv_event_sink = [this](kvevents::EventBatch&& b) { batches_.push_back(std::move(b)); };
  auto engine = Engine::Create(*l_.model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Engine& e = **engine;

  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(l_.model->n_vocab()) - 1);
  std::vector<int32_t> shared;
  for (int i = 0; i < 40; ++i) shared.push_back(tok(rng));
  for (int r = 0; r < 8; ++r) {
    // Every other request extends the shared head (adopted, not stored again).
    std::vector<int32_t> prompt = r % 2 == 0 ? shared : std::vector<int32_t>{};
    const int extra = 20 + 9 * r;
    for (int i = 0; i < extra; ++i) prompt.push_back(tok(rng));
    EngineRequest req;
    req.id = "r" + std::to_string(r);
    req.prompt = prompt;
    req.max_tokens = 6;
    req.sampling.temperature = 0;
    auto h = e.Submit(req);
    ASSERT_TRUE(h.ok());
    while (e.Step()) {
    }
    std::vector<int32_t> all = prompt;
    while (auto ev = (*h)->TryPop()) {
      if (ev->has_token()) all.push_back(ev->token);
      if (ev->is_final()) {
        ASSERT_TRUE(ev->error.ok()) << ev->error.ToString();
      }
    }
    AddChain(all, ref_);
    Apply();
    ExpectAliveMatchesCache(e);
    // Every full block of the prompt is cached now (stored by this request or before).
    std::map<uint64_t, RefBlock> mine;
    AddChain(prompt, mine);
    for (const auto& [lo, b] : mine) EXPECT_EQ(alive_.count(lo), 1u) << "request " << r << " prompt block missing";
  }
  ASSERT_FALSE(batches_.empty());
  // The cache starts empty: the first event says so (driven by Step, it
  // shares the first step's batch; with Start it is a batch of its own).
  ASSERT_FALSE(batches_[0].events.empty());
  EXPECT_TRUE(std::holds_alternative<kvevents::AllBlocksCleared>(batches_[0].events[0]));
  EXPECT_GT(removed_, 0) << "the pool never evicted: the test did not exercise removals";
}

TEST_F(KvEventCollectorTest, SaltedBlocksCarryTheSaltDigestInExtraKeys) {
  EngineOptions o;
  o.n_ctx = 128;
  o.max_running = 2;
  o.block_size = kBlock;
  o.kv_type = KvType::kF32;
  o.kv_event_sink = [this](kvevents::EventBatch&& b) { batches_.push_back(std::move(b)); };
  auto engine = Engine::Create(*l_.model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<int32_t> prompt;
  for (int i = 0; i < 50; ++i) prompt.push_back(3 + (i * 7) % 200);
  // The same prompt unsalted, then under two salts: three chains.
  for (const std::string salt : {"", "tenant-a", "tenant-b"}) {
    EngineRequest req;
    req.id = "r";
    req.prompt = prompt;
    req.max_tokens = 2;
    req.sampling.temperature = 0;
    req.cache_salt = salt;
    ASSERT_TRUE((*engine)->Submit(req).ok());
    while ((*engine)->Step()) {
    }
  }
  std::map<std::string, std::vector<kvevents::BlockStored>> by_salt;
  for (const auto& b : batches_) {
    // Each batch goes through the wire format.
    auto d = kvevents::DecodeBatch(kvevents::EncodeBatch(b));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_EQ(*d, b);
    for (const auto& ev : d->events) {
      const auto* st = std::get_if<kvevents::BlockStored>(&ev);
      if (st == nullptr) continue;
      std::string salt;
      if (st->extra_keys) {
        ASSERT_EQ(st->extra_keys->size(), st->block_hashes.size());
        const uint64_t a = kvevents::SaltDigest("tenant-a"), bb = kvevents::SaltDigest("tenant-b");
        for (const auto& k : *st->extra_keys) {
          ASSERT_TRUE(k.has_value());
          ASSERT_EQ(k->size(), 1u);
          ASSERT_EQ((*k)[0].kind, kvevents::ExtraKey::Kind::kInt);
          salt = (*k)[0].int_value == a ? "tenant-a" : (*k)[0].int_value == bb ? "tenant-b" : "?";
        }
      }
      by_salt[salt].push_back(*st);
    }
  }
  ASSERT_EQ(by_salt.size(), 3u) << "expected an unsalted chain and one per salt, no unknown digest";
  for (const std::string salt : {"", "tenant-a", "tenant-b"}) {
    // The chain's hashes are the engine's, computed from that salt's root.
    kv::BlockHasher hasher(kBlock);
    kv::BlockHash parent = hasher.Root(salt);
    std::vector<uint64_t> want;
    for (size_t i = 0; i + kBlock <= prompt.size(); i += kBlock) {
      parent = hasher.Next(parent, std::span<const int32_t>(prompt).subspan(i, kBlock));
      want.push_back(parent.lo);
    }
    std::vector<uint64_t> got;
    for (const auto& st : by_salt[salt]) {
      for (const auto& h : st.block_hashes) got.push_back(h.int_value());
    }
    EXPECT_EQ(got, want) << "salt '" << salt << "'";
  }
}

TEST_F(KvEventCollectorTest, RefusesEventsWithoutPrefixCaching) {
  EngineOptions o;
  o.prefix_caching = false;
  o.kv_event_sink = [](kvevents::EventBatch&&) {};
  EXPECT_FALSE(Engine::Create(*l_.model, o).ok());
}

}  // namespace
}  // namespace pagoda
