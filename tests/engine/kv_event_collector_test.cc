// The KV events the engine emits, checked against an independent account:
// each request's blocks hashed here with kv::BlockHasher (the published
// byte-level contract of kv/block_hash.h) over the tokens the request really
// held (prompt, then what it generated), and the prefix cache's own contents.
// Real requests through the engine on stories260K with a KV pool small
// enough that later requests evict earlier blocks.
#include "engine/kv_event_collector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <unistd.h>

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

// With the disk tier, a block leaving the pool is announced in medium DISK
// (tokens and parent as the reference chain has them) before its CPU
// removal; blocks restored when the prompt returns come back as CPU stores
// while they stay on disk. Every DISK block is on disk.
// With a disk bound of a few blocks, the tier drops the oldest: each drop is
// a BlockRemoved in DISK, so the DISK blocks the events leave alive are
// exactly those on disk.
class KvEventCollectorDiskTest : public KvEventCollectorTest, public ::testing::WithParamInterface<int> {};

TEST_P(KvEventCollectorDiskTest, DiskTierBlocksAreAnnouncedInTheirMedium) {
  const int disk_blocks = GetParam();
  const std::string dir = ::testing::TempDir() + "pagoda_kv_events_disk_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  EngineOptions o;
  o.n_ctx = 128;
  o.max_running = 1;
  o.block_size = kBlock;
  o.kv_type = KvType::kF32;
  o.kv_memory_bytes = 12 * PagedKvCache::BlockBytes(l_.model->kv_cache_spec(), o.kv_type, kBlock);
  o.kv_offload_dir = dir;
  const int64_t block_bytes = PagedKvCache::BlockBytes(l_.model->kv_cache_spec(), o.kv_type, kBlock);
  o.kv_offload_disk_bytes = disk_blocks * (block_bytes + 96 + 4 * kBlock + 8);  // records (kv/block_file.h)
  o.model_fingerprint = 0x1234;
  o.kv_event_sink = [this](kvevents::EventBatch&& b) { batches_.push_back(std::move(b)); };
  auto engine = Engine::Create(*l_.model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Engine& e = **engine;

  std::set<uint64_t> cpu, disk;
  int disk_stored = 0, disk_removed = 0, restored_cpu = 0;
  const uint64_t root = kv::BlockHasher(kBlock).Root("").lo;
  auto apply = [&] {
    for (; applied_ < batches_.size(); ++applied_) {
      for (const kvevents::KvEvent& ev : batches_[applied_].events) {
        if (const auto* st = std::get_if<kvevents::BlockStored>(&ev)) {
          ASSERT_TRUE(st->medium.has_value());
          ASSERT_EQ(st->token_ids.size(), st->block_hashes.size() * kBlock);
          std::optional<uint64_t> parent;
          if (st->parent_block_hash) parent = st->parent_block_hash->int_value();
          for (size_t i = 0; i < st->block_hashes.size(); ++i) {
            const uint64_t h = st->block_hashes[i].int_value();
            const RefBlock& ref = ref_.at(h);
            EXPECT_EQ(std::vector<int32_t>(st->token_ids.begin() + i * kBlock, st->token_ids.begin() + (i + 1) * kBlock),
                      ref.tokens);
            if (*st->medium == "DISK") {
              // Named by hash even at the root, and announced while the pool still holds it.
              EXPECT_EQ(parent, ref.parent ? *ref.parent : root);
              EXPECT_EQ(cpu.count(h), 1u) << "DISK store of a block the pool did not hold";
              EXPECT_TRUE(disk.insert(h).second);
              ++disk_stored;
            } else {
              EXPECT_EQ(*st->medium, "CPU");
              EXPECT_EQ(parent, ref.parent);
              EXPECT_TRUE(cpu.insert(h).second);
              restored_cpu += disk.count(h) != 0;
            }
            parent = h;
          }
        } else if (const auto* rm = std::get_if<kvevents::BlockRemoved>(&ev)) {
          std::set<uint64_t>& set = rm->medium == "DISK" ? disk : cpu;
          for (const auto& h : rm->block_hashes) EXPECT_EQ(set.erase(h.int_value()), 1u);
          if (rm->medium == "DISK") disk_removed += static_cast<int>(rm->block_hashes.size());
        } else {
          cpu.clear();
          disk.clear();
        }
      }
    }
  };
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(l_.model->n_vocab()) - 1);
  std::vector<std::vector<int32_t>> prompts;
  auto run = [&](const std::vector<int32_t>& prompt) {
    EngineRequest req;
    req.id = "r";
    req.prompt = prompt;
    req.max_tokens = 4;
    req.sampling.temperature = 0;
    auto h = e.Submit(req);
    ASSERT_TRUE(h.ok());
    while (e.Step()) {
    }
    std::vector<int32_t> all = prompt;
    while (auto ev = (*h)->TryPop()) {
      if (ev->has_token()) all.push_back(ev->token);
    }
    AddChain(all, ref_);
    apply();
  };
  for (int r = 0; r < 6; ++r) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < 60; ++i) prompt.push_back(tok(rng));
    prompts.push_back(prompt);
    run(prompt);
  }
  ASSERT_GT(disk_stored, 0) << "the pool never evicted to disk";
  const PagedKvCache& kv = e.kv_cache();
  ASSERT_NE(kv.disk_tier(), nullptr);
  EXPECT_EQ(disk_stored, kv.offload_stats().offered_blocks);
  for (int i = 0; i < 5000 && kv.disk_tier()->stats().writes < disk_stored; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(kv.disk_tier()->stats().writes, disk_stored);
  e.Step();  // nothing to run: drains the tier's removals into a batch
  apply();
  for (uint64_t h : disk) EXPECT_TRUE(kv.disk_tier()->Contains(ref_.at(h).hash));
  for (const auto& [lo, b] : ref_) {
    if (kv.disk_tier()->Contains(b.hash)) EXPECT_EQ(disk.count(lo), 1u) << "a block on disk the events do not hold";
  }
  if (disk_blocks < 20) {
    EXPECT_GT(disk_removed, 0) << "the disk bound never dropped a block";
    return;
  }
  EXPECT_EQ(disk_removed, 0);
  // The first prompt returns: its blocks come back from disk, as CPU stores.
  run(prompts[0]);
  EXPECT_GT(restored_cpu, 0);
  EXPECT_EQ(static_cast<int32_t>(cpu.size()), kv.prefix_cache().n_registered());
  engine->reset();  // writes the pool's blocks at shutdown, into the directory

  // Restart on the same directory: right after its AllBlocksCleared the new
  // engine announces, in DISK, every block on disk whose chain reaches the
  // root through blocks also on disk, parents first, first blocks with a nil
  // parent, so a router rebuilds the chains.
  batches_.clear();
  applied_ = 0;
  auto again = Engine::Create(*l_.model, o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  (*again)->Step();
  ASSERT_FALSE(batches_.empty());
  const auto& events = batches_[0].events;
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(std::holds_alternative<kvevents::AllBlocksCleared>(events[0]));
  const kv::KvTier* tier = (*again)->kv_cache().disk_tier();
  ASSERT_NE(tier, nullptr);
  std::set<uint64_t> announced;
  for (size_t i = 1; i < events.size(); ++i) {
    const auto* st = std::get_if<kvevents::BlockStored>(&events[i]);
    ASSERT_NE(st, nullptr) << "only stores follow the clear";
    ASSERT_EQ(st->medium, std::optional<std::string>("DISK"));
    std::optional<uint64_t> parent;
    if (st->parent_block_hash) parent = st->parent_block_hash->int_value();
    for (size_t j = 0; j < st->block_hashes.size(); ++j) {
      const uint64_t h = st->block_hashes[j].int_value();
      const RefBlock& ref = ref_.at(h);
      EXPECT_EQ(parent, ref.parent);
      if (parent) EXPECT_EQ(announced.count(*parent), 1u) << "a child before its parent";
      EXPECT_EQ(std::vector<int32_t>(st->token_ids.begin() + j * kBlock, st->token_ids.begin() + (j + 1) * kBlock),
                ref.tokens);
      EXPECT_TRUE(tier->Contains(ref.hash));
      EXPECT_TRUE(announced.insert(h).second);
      parent = h;
    }
  }
  std::set<uint64_t> want;
  for (const auto& [lo, b] : ref_) {
    bool reaches = true;
    for (std::optional<uint64_t> at = lo; at && reaches; at = ref_.at(*at).parent) {
      reaches = tier->Contains(ref_.at(*at).hash);
    }
    if (reaches) want.insert(lo);
  }
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(announced, want);
  again->reset();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(DiskBound, KvEventCollectorDiskTest, ::testing::Values(4, 1000));

TEST_F(KvEventCollectorTest, RefusesEventsWithoutPrefixCaching) {
  EngineOptions o;
  o.prefix_caching = false;
  o.kv_event_sink = [](kvevents::EventBatch&&) {};
  EXPECT_FALSE(Engine::Create(*l_.model, o).ok());
}

}  // namespace
}  // namespace pagoda
