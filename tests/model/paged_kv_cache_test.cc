#include "model/paged_kv_cache.h"

#include <unistd.h>

#include <cstring>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "model/model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

// One layer, 2 KV heads of 2 dims: rows of 4 floats.
KvCacheSpec Spec() { return KvCacheSpec{{KvLayerSpec{2, 2, 2}}}; }

std::unique_ptr<PagedKvCache> MakeCache(int32_t n_blocks, int32_t block_size = 4, int32_t n_seq = 3,
                                        KvType type = KvType::kF32, bool prefix_caching = true) {
  PagedKvCacheOptions o;
  o.n_seq_max = n_seq;
  o.n_ctx = 64;
  o.block_size = block_size;
  o.type = type;
  o.prefix_caching = prefix_caching;
  o.memory_bytes = n_blocks * PagedKvCache::BlockBytes(Spec(), type, block_size);
  auto kv = PagedKvCache::Create(Spec(), o);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  return std::move(kv).value();
}

Batch Positions(int32_t seq, int32_t from, int32_t to) {
  Batch b;
  for (int32_t p = from; p < to; ++p) b.Add(0, p, seq, false);
  return b;
}

// Prepares [from, to) of `seq` and writes K = V = {base + pos, ...}.
void Fill(PagedKvCache& kv, int32_t seq, int32_t from, int32_t to, float base = 0) {
  ASSERT_TRUE(kv.Prepare(Positions(seq, from, to)).ok());
  for (int32_t p = from; p < to; ++p) {
    const float row[4] = {base + p, base + p + 0.25f, base + p + 0.5f, base + p + 0.75f};
    kv.WriteK(0, seq, p, row);
    kv.WriteV(0, seq, p, row);
  }
}

// Element d of head h at `pos`, read through the view as the attention kernel does (f32 cache).
float KAt(const PagedKvCache& kv, int32_t seq, int32_t pos, int h, int d) {
  const kernels::KvView v = kv.View(0, seq);
  const float* block = static_cast<const float*>(v.k_blocks[pos / v.block_size]);
  return block[(pos % v.block_size) * v.k_pos_stride + h * v.k_head_stride + d];
}

std::vector<int32_t> Tokens(int n, int32_t first = 1) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(first + i);
  return t;
}

TEST(PagedKvCacheTest, RowsReadBackThroughTheBlockList) {
  auto kv = MakeCache(8);
  Fill(*kv, 1, 0, 10, 100);
  Fill(*kv, 0, 0, 3);  // interleaved allocation: the blocks of seq 1 are not contiguous
  Fill(*kv, 1, 10, 13, 100);
  EXPECT_EQ(kv->SequenceLength(1), 13);
  EXPECT_EQ(kv->block_table(1).size(), 4);
  for (int32_t p = 0; p < 13; ++p) {
    EXPECT_EQ(KAt(*kv, 1, p, 0, 0), 100 + p);
    EXPECT_EQ(KAt(*kv, 1, p, 1, 1), 100 + p + 0.75f);
  }
  const kernels::KvView v = kv->View(0, 1);
  EXPECT_EQ(v.block_size, 4);
  EXPECT_EQ(static_cast<const float*>(v.v_blocks[2])[1 * v.v_pos_stride + 1 * v.v_head_stride], 109.5f);
  EXPECT_TRUE(kv->block_table(1).Verify(kv->pool()));
}

TEST(PagedKvCacheTest, PrepareTakesBlocksAsPositionsGrow) {
  auto kv = MakeCache(4);
  EXPECT_EQ(kv->capacity(), 16);
  EXPECT_EQ(kv->BlocksToGrow(0, 5), 2);
  Fill(*kv, 0, 0, 1);
  EXPECT_EQ(kv->pool().n_held(), 1);
  Fill(*kv, 0, 1, 4);
  EXPECT_EQ(kv->pool().n_held(), 1);
  Fill(*kv, 0, 4, 5);
  EXPECT_EQ(kv->pool().n_held(), 2);
  EXPECT_EQ(kv->usage(), 0.5);
  EXPECT_EQ(kv->BlocksToGrow(0, 5), 0);
  EXPECT_EQ(kv->capacity(), 8);
}

TEST(PagedKvCacheTest, FullPoolIsResourceExhaustedAndChangesNothing) {
  auto kv = MakeCache(2);
  Fill(*kv, 0, 0, 4);
  Fill(*kv, 1, 0, 2);
  Batch b = Positions(0, 4, 5);
  b.Add(0, 2, 1, false);  // fits in seq 1's block, but seq 0 needs a new one
  EXPECT_EQ(kv->Prepare(b).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(kv->SequenceLength(0), 4);
  EXPECT_EQ(kv->SequenceLength(1), 2);
  EXPECT_EQ(kv->pool().n_held(), 2);
  kv->RemoveSequence(1);  // the scheduler preempts seq 1
  EXPECT_TRUE(kv->Prepare(Positions(0, 4, 5)).ok());
  EXPECT_EQ(kv->SequenceLength(0), 5);
}

TEST(PagedKvCacheTest, RejectsGapsBadSequencesAndContextOverflow) {
  auto kv = MakeCache(32);
  EXPECT_EQ(kv->Prepare(Positions(0, 1, 2)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kv->Prepare(Positions(3, 0, 1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kv->Prepare(Positions(0, 0, 65)).code(), StatusCode::kResourceExhausted);  // n_ctx 64
  EXPECT_EQ(kv->pool().n_held(), 0);
}

TEST(PagedKvCacheTest, TruncateReleasesTailBlocks) {
  auto kv = MakeCache(4);
  Fill(*kv, 0, 0, 10);
  EXPECT_EQ(kv->pool().n_held(), 3);
  kv->Truncate(0, 5);
  EXPECT_EQ(kv->SequenceLength(0), 5);
  EXPECT_EQ(kv->pool().n_held(), 2);
  Fill(*kv, 0, 5, 8, 50);
  EXPECT_EQ(KAt(*kv, 0, 4, 0, 0), 4);
  EXPECT_EQ(KAt(*kv, 0, 5, 0, 0), 55);
  kv->RemoveSequence(0);
  EXPECT_EQ(kv->pool().n_held(), 0);
  EXPECT_EQ(kv->SequenceLength(0), 0);
}

TEST(PagedKvCacheTest, AdoptPrefixLeavesTheLastTokenToCompute) {
  auto kv = MakeCache(8);
  const std::vector<int32_t> t = Tokens(9);
  Fill(*kv, 0, 0, 9);
  EXPECT_EQ(kv->CommitBlocks(0, t, ""), 2);
  EXPECT_EQ(kv->CommitBlocks(0, t, ""), 0);  // already registered
  // 8 tokens: 2 full blocks cached, but the 8th token must be computed.
  EXPECT_EQ(kv->AdoptPrefix(1, std::span(t).first(8), ""), 4);
  EXPECT_EQ(kv->block_table(1)[0], kv->block_table(0)[0]);
  EXPECT_EQ(kv->pool().ref_count(kv->block_table(0)[0]), 2);
  EXPECT_EQ(kv->SequenceLength(1), 4);
  EXPECT_EQ(KAt(*kv, 1, 3, 0, 0), 3);
  kv->RemoveSequence(1);
  EXPECT_EQ(kv->AdoptPrefix(1, t, ""), 8);
  kv->RemoveSequence(1);
  EXPECT_EQ(kv->AdoptPrefix(1, t, "other tenant"), 0);
  EXPECT_EQ(kv->AdoptPrefix(2, std::span(t).first(1), ""), 0);
  const kv::PrefixCacheStats& st = kv->prefix_cache().stats();
  EXPECT_EQ(st.tokens_queried, 8 + 9 + 9 + 1);
  EXPECT_EQ(st.tokens_hit, 4 + 8);
}

TEST(PagedKvCacheTest, CommitCoversOnlyWrittenFullBlocks) {
  auto kv = MakeCache(8);
  const std::vector<int32_t> t = Tokens(12);
  Fill(*kv, 0, 0, 7);
  EXPECT_EQ(kv->CommitBlocks(0, t, ""), 1);  // KV holds 7 positions: one full block
  Fill(*kv, 0, 7, 12);
  EXPECT_EQ(kv->CommitBlocks(0, std::span(t).first(10), ""), 1);  // tokens known for 2 blocks
  EXPECT_EQ(kv->CommitBlocks(0, t, ""), 1);
  EXPECT_EQ(kv->prefix_cache().n_registered(), 3);
}

TEST(PagedKvCacheTest, FinishedSequenceBlocksServeTheNextRequestUntilEvicted) {
  auto kv = MakeCache(3);
  const std::vector<int32_t> t = Tokens(9);
  Fill(*kv, 0, 0, 9);
  kv->CommitBlocks(0, t, "");
  kv->RemoveSequence(0);
  EXPECT_EQ(kv->usage(), 0.0);  // cached but unreferenced counts as free
  EXPECT_EQ(kv->pool().n_cached_idle(), 2);
  EXPECT_EQ(kv->AdoptPrefix(1, t, ""), 8);
  kv->RemoveSequence(1);
  // Another request needs all three blocks: the cached ones are evicted.
  std::vector<kv::PrefixCacheEvent> events;
  kv->prefix_cache().SetEventSink([&](const kv::PrefixCacheEvent& e) { events.push_back(e); });
  Fill(*kv, 2, 0, 12, 500);
  EXPECT_EQ(events.size(), 2u);
  EXPECT_EQ(kv->AdoptPrefix(1, t, ""), 0);
}

// The disk offload tier: blocks the pool evicts are written down and a
// later sequence with the same prefix gets them back, bitwise, instead of
// computing them; another salt (tenant) or another model fingerprint finds
// nothing; keep_available bounds how many blocks a restore may take.
TEST(PagedKvCacheTest, EvictedBlocksComeBackFromTheDiskTier) {
  const std::string dir = ::testing::TempDir() + "/pagoda_kv_offload_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto make = [&](uint64_t fingerprint, KvType type) {
    PagedKvCacheOptions o;
    o.n_seq_max = 3;
    o.n_ctx = 64;
    o.block_size = 4;
    o.type = type;
    o.memory_bytes = 3 * PagedKvCache::BlockBytes(Spec(), type, 4);
    o.offload_dir = dir;
    o.offload_disk_bytes = 1 << 20;
    o.model_fingerprint = fingerprint;
    auto kv = PagedKvCache::Create(Spec(), o);
    EXPECT_TRUE(kv.ok()) << kv.status().ToString();
    return std::move(kv).value();
  };
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kFp8E4M3, KvType::kInt8}) {
    const std::vector<int32_t> t = Tokens(9);
    std::vector<std::vector<uint8_t>> original;
    {
      auto kv = make(7, type);
      Fill(*kv, 0, 0, 9);
      ASSERT_EQ(kv->CommitBlocks(0, t, "tenant-a"), 2);
      for (int i = 0; i < 2; ++i) {
        const auto* b = static_cast<const uint8_t*>(kv->pool().data(kv->block_table(0)[i]));
        original.emplace_back(b, b + kv->pool().block_bytes());
      }
      kv->RemoveSequence(0);
      // Another sequence needs every block: the two cached ones are evicted to disk.
      Fill(*kv, 1, 0, 12, 500);
      kv->RemoveSequence(1);
      kv->disk_tier()->Flush();
      EXPECT_EQ(kv->disk_tier()->stats().writes, 2);
      EXPECT_EQ(kv->offload_stats().offered_blocks, 2);
      // Same prefix, other salt: nothing.
      EXPECT_EQ(kv->AdoptPrefix(2, t, "tenant-b"), 0);
      kv->RemoveSequence(2);
      // keep_available 3: the pool cannot spare a block, nothing restored.
      EXPECT_EQ(kv->AdoptPrefix(2, t, "tenant-a", 3), 0);
      kv->RemoveSequence(2);
      // Through the loader thread: pending, then ready, then adopted from its staging.
      EXPECT_EQ(kv->PrefetchPrefix(42, t, "tenant-b"), PagedKvCache::PrefetchState::kNotNeeded);
      ASSERT_EQ(kv->PrefetchPrefix(42, t, "tenant-a"), PagedKvCache::PrefetchState::kPending);
      for (int i = 0; i < 5000 && kv->prefetch_pending(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_EQ(kv->PrefetchPrefix(42, t, "tenant-a"), PagedKvCache::PrefetchState::kReady);
      const int64_t read_before = kv->disk_tier()->stats().read_bytes;
      EXPECT_EQ(kv->AdoptPrefix(2, t, "tenant-a", 0, 42), 8) << KvTypeName(type);
      EXPECT_EQ(kv->disk_tier()->stats().read_bytes, read_before) << "adoption read the disk again";
      EXPECT_EQ(kv->tier_loader()->stats().blocks, 2);
      EXPECT_EQ(kv->PrefetchPrefix(42, t, "tenant-a"), PagedKvCache::PrefetchState::kNotNeeded);  // in the pool now
      for (int i = 0; i < 2; ++i) {
        const auto* b = static_cast<const uint8_t*>(kv->pool().data(kv->block_table(2)[i]));
        EXPECT_EQ(0, std::memcmp(b, original[i].data(), original[i].size())) << KvTypeName(type) << " block " << i;
      }
      EXPECT_EQ(kv->offload_stats().restored_tokens, 8);
      kv->RemoveSequence(2);
      // Restored blocks are registered: the next sequence adopts them from the pool.
      EXPECT_EQ(kv->AdoptPrefix(0, t, "tenant-a"), 8);
      EXPECT_EQ(kv->offload_stats().restored_tokens, 8);
    }
    {
      // A restarted cache finds them on disk; another fingerprint does not.
      auto other = make(8, type);
      EXPECT_EQ(other->AdoptPrefix(0, t, "tenant-a"), 0);
      auto kv = make(7, type);
      EXPECT_EQ(kv->AdoptPrefix(0, t, "tenant-a"), 8);
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(PagedKvCacheTest, StoredEventsCarryEachBlocksTokensAndChain) {
  auto kv = MakeCache(8);
  std::vector<kv::PrefixCacheEvent> events;
  std::vector<std::vector<int32_t>> tokens;  // copied: the span lives only during the call
  kv->prefix_cache().SetEventSink([&](const kv::PrefixCacheEvent& e) {
    events.push_back(e);
    tokens.emplace_back(e.tokens.begin(), e.tokens.end());
  });
  const std::vector<int32_t> t = Tokens(9, 40);
  Fill(*kv, 0, 0, 9);
  kv->CommitBlocks(0, t, "");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(tokens[0], std::vector<int32_t>(t.begin(), t.begin() + 4));
  EXPECT_EQ(tokens[1], std::vector<int32_t>(t.begin() + 4, t.begin() + 8));
  EXPECT_TRUE(events[0].first);
  EXPECT_FALSE(events[1].first);
  EXPECT_EQ(events[1].parent, events[0].hash);
}

TEST(PagedKvCacheTest, RewriteOfASharedBlockWritesAPrivateCopy) {
  auto kv = MakeCache(8);
  const std::vector<int32_t> t = Tokens(9);
  Fill(*kv, 0, 0, 9);
  kv->CommitBlocks(0, t, "");
  ASSERT_EQ(kv->AdoptPrefix(1, t, ""), 8);
  const kv::BlockId shared = kv->block_table(0)[1];
  kv->Truncate(1, 6);  // back into the shared second block
  Fill(*kv, 1, 6, 8, 1000);
  EXPECT_NE(kv->block_table(1)[1], shared);
  EXPECT_EQ(kv->block_table(1)[0], kv->block_table(0)[0]);
  EXPECT_EQ(KAt(*kv, 1, 5, 0, 0), 5);     // copied
  EXPECT_EQ(KAt(*kv, 1, 6, 0, 0), 1006);  // rewritten in the copy
  EXPECT_EQ(KAt(*kv, 0, 6, 0, 0), 6);     // the shared block is untouched
  kv->RemoveSequence(2);
  EXPECT_EQ(kv->AdoptPrefix(2, t, ""), 8);
  EXPECT_EQ(kv->block_table(2)[1], shared);
}

TEST(PagedKvCacheTest, RewriteOfAnUnsharedCachedBlockUnregistersIt) {
  auto kv = MakeCache(8);
  const std::vector<int32_t> t = Tokens(9);
  Fill(*kv, 0, 0, 9);
  kv->CommitBlocks(0, t, "");
  const kv::BlockId b = kv->block_table(0)[1];
  kv->Truncate(0, 6);
  Fill(*kv, 0, 6, 8, 1000);  // speculative tokens rejected, others written
  EXPECT_EQ(kv->block_table(0)[1], b);
  EXPECT_FALSE(kv->pool().cached(b));
  EXPECT_EQ(kv->AdoptPrefix(1, t, ""), 4);
  std::vector<int32_t> t2 = t;
  t2[6] = 1006;
  t2[7] = 1007;
  EXPECT_EQ(kv->CommitBlocks(0, t2, ""), 1);  // the rewritten block under its new hash
  kv->RemoveSequence(1);
  EXPECT_EQ(kv->AdoptPrefix(1, t2, ""), 8);
}

TEST(PagedKvCacheTest, IntegrityTagsChangeWhenBlocksAreReused) {
  auto kv = MakeCache(2);
  Fill(*kv, 0, 0, 8);
  const kv::BlockId b = kv->block_table(0)[0];
  const uint32_t tag = kv->pool().integrity_tag(b);
  kv->RemoveSequence(0);
  Fill(*kv, 1, 0, 8);
  EXPECT_NE(kv->pool().integrity_tag(b), tag);
  EXPECT_TRUE(kv->block_table(1).Verify(kv->pool()));
}

TEST(PagedKvCacheTest, DisabledPrefixCachingAdoptsNothing) {
  auto kv = MakeCache(8, 4, 3, KvType::kF32, /*prefix_caching=*/false);
  const std::vector<int32_t> t = Tokens(9);
  Fill(*kv, 0, 0, 9);
  EXPECT_EQ(kv->CommitBlocks(0, t, ""), 0);
  EXPECT_EQ(kv->AdoptPrefix(1, t, ""), 0);
  kv->RemoveSequence(0);
  EXPECT_EQ(kv->pool().n_free(), 8);
}

TEST(PagedKvCacheTest, RejectsBadOptions) {
  PagedKvCacheOptions o;
  o.memory_bytes = 1 << 20;
  EXPECT_FALSE(PagedKvCache::Create(KvCacheSpec{}, o).ok());
  o.n_seq_max = 0;
  EXPECT_FALSE(PagedKvCache::Create(Spec(), o).ok());
  o.n_seq_max = 1;
  o.memory_bytes = 10;
  EXPECT_EQ(PagedKvCache::Create(Spec(), o).status().code(), StatusCode::kInvalidArgument);
}

// ---- stories260K through both caches ----

struct Request {
  int32_t seq = 0;
  std::vector<int32_t> prompt;
  int32_t start = 0;  // prompt positions already in the cache (an adopted prefix)
};

struct RequestOutput {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits;  // one row per step
};

struct RunOutput {
  std::vector<RequestOutput> requests;
  int64_t tokens_computed = 0;
};

int32_t Argmax(const std::vector<float>& x) {
  int32_t best = 0;
  for (size_t i = 1; i < x.size(); ++i) {
    if (x[i] > x[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

// Greedy decoding of all requests in lockstep in one cache: the first step
// feeds every prompt from its start, interleaved token by token; then one
// token per request per step. With `paged`, each step's full blocks are
// committed to the prefix cache, as the engine will.
RunOutput GenerateGreedy(Model& model, KvCache& kv, const std::vector<Request>& reqs, int n_predict,
                         PagedKvCache* paged = nullptr) {
  const int64_t n_vocab = model.n_vocab();
  RunOutput out;
  out.requests.resize(reqs.size());
  std::vector<std::vector<int32_t>> tokens;  // per request: prompt + generated
  for (const Request& r : reqs) tokens.push_back(r.prompt);
  Batch batch;
  std::vector<size_t> owner;  // request of each logits row
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (size_t r = 0; r < reqs.size(); ++r) {
      const size_t p = reqs[r].start + i;
      if (p >= reqs[r].prompt.size()) continue;
      any = true;
      const bool last = p + 1 == reqs[r].prompt.size();
      batch.Add(reqs[r].prompt[p], static_cast<int32_t>(p), reqs[r].seq, last);
      if (last) owner.push_back(r);
    }
    if (!any) break;
  }
  std::vector<float> logits;
  for (int step = 0; step < n_predict; ++step) {
    logits.assign(batch.n_outputs() * n_vocab, 0.0f);
    const Status st = model.Forward(batch, kv, logits);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) break;
    out.tokens_computed += batch.size();
    batch.Clear();
    std::vector<size_t> next_owner;
    for (size_t o = 0; o < owner.size(); ++o) {
      const size_t r = owner[o];
      std::vector<float> row(logits.begin() + o * n_vocab, logits.begin() + (o + 1) * n_vocab);
      const int32_t next = Argmax(row);
      out.requests[r].ids.push_back(next);
      out.requests[r].logits.push_back(std::move(row));
      batch.Add(next, static_cast<int32_t>(tokens[r].size()), reqs[r].seq, true);
      tokens[r].push_back(next);
      next_owner.push_back(r);
    }
    owner.swap(next_owner);
    if (paged != nullptr) {
      for (size_t r = 0; r < reqs.size(); ++r) paged->CommitBlocks(reqs[r].seq, tokens[r], "");
    }
  }
  return out;
}

// Deterministic prompt of n tokens after BOS, in stories260K's 512-token vocabulary.
std::vector<int32_t> Prompt(int n, uint32_t salt) {
  std::vector<int32_t> t = {1};
  uint32_t s = salt * 2654435761u + 12345u;
  for (int i = 1; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>(3 + (s >> 8) % 500));
  }
  return t;
}

class PagedKvCacheModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
    auto m = LoadModel(testing::TestDataPath("stories260K.gguf"), pool_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
  }
  std::unique_ptr<ContiguousKvCache> Contiguous(int32_t n_seq, KvType type = KvType::kF16) {
    auto kv = ContiguousKvCache::Create(model_->kv_cache_spec(), n_seq, 256, type);
    EXPECT_TRUE(kv.ok());
    return std::move(kv).value();
  }
  std::unique_ptr<PagedKvCache> Paged(int32_t n_seq, int32_t block_size = 16, KvType type = KvType::kF16,
                                      bool prefix_caching = true) {
    PagedKvCacheOptions o;
    o.n_seq_max = n_seq;
    o.n_ctx = 256;
    o.block_size = block_size;
    o.type = type;
    o.prefix_caching = prefix_caching;
    o.memory_bytes = 64 * PagedKvCache::BlockBytes(model_->kv_cache_spec(), type, block_size);
    auto kv = PagedKvCache::Create(model_->kv_cache_spec(), o);
    EXPECT_TRUE(kv.ok()) << kv.status().ToString();
    return std::move(kv).value();
  }

  ThreadPool pool_{2};
  std::unique_ptr<Model> model_;
};

TEST_F(PagedKvCacheModelTest, InterleavedSequencesGiveTheSameLogitsAsTheContiguousCache) {
  const std::vector<Request> reqs = {{0, Prompt(37, 1)}, {1, Prompt(21, 2)}};
  for (KvType type : {KvType::kF16, KvType::kF32, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8}) {
    for (int32_t bs : {16, 5}) {
      // Scaled types too: a position's scale is its own, so any block size
      // stores the same codes as the contiguous cache's groups.
      SCOPED_TRACE(std::string(kernels::KvTypeName(type)) + ", block size " + std::to_string(bs));
      auto contiguous = Contiguous(2, type);
      auto paged = Paged(2, bs, type);
      const RunOutput want = GenerateGreedy(*model_, *contiguous, reqs, 24);
      const RunOutput got = GenerateGreedy(*model_, *paged, reqs, 24, paged.get());
      for (size_t r = 0; r < reqs.size(); ++r) {
        EXPECT_EQ(got.requests[r].ids, want.requests[r].ids);
        EXPECT_EQ(got.requests[r].logits, want.requests[r].logits);  // bit for bit
      }
      EXPECT_GT(paged->pool().n_held(), 2);
    }
  }
}

TEST_F(PagedKvCacheModelTest, AdoptedPrefixGivesTheSameGreedyOutputWithFewerTokens) {
  const std::vector<int32_t> prompt = Prompt(45, 3);
  const int kPredict = 16;
  auto contiguous = Contiguous(1);
  const RunOutput want = GenerateGreedy(*model_, *contiguous, {{0, prompt}}, kPredict);

  auto paged = Paged(3);
  const RunOutput first = GenerateGreedy(*model_, *paged, {{0, prompt}}, kPredict, paged.get());
  EXPECT_EQ(first.requests[0].ids, want.requests[0].ids);
  EXPECT_EQ(first.tokens_computed, 45 + kPredict - 1);

  // The same prompt while the first request is still alive: its blocks are shared.
  const int32_t adopted = paged->AdoptPrefix(1, prompt, "");
  EXPECT_EQ(adopted, 32);  // (45 - 1) rounded down to 16
  EXPECT_EQ(paged->block_table(1)[1], paged->block_table(0)[1]);
  const RunOutput second = GenerateGreedy(*model_, *paged, {{1, prompt, adopted}}, kPredict, paged.get());
  EXPECT_EQ(second.requests[0].ids, want.requests[0].ids);
  EXPECT_EQ(second.requests[0].logits, want.requests[0].logits);
  EXPECT_EQ(second.tokens_computed, 45 - 32 + kPredict - 1);

  // A follow-up turn after both finished: prompt + part of the answer is cached.
  paged->RemoveSequence(0);
  paged->RemoveSequence(1);
  std::vector<int32_t> turn = prompt;
  turn.insert(turn.end(), want.requests[0].ids.begin(), want.requests[0].ids.begin() + 10);
  auto contiguous2 = Contiguous(1);
  const RunOutput want2 = GenerateGreedy(*model_, *contiguous2, {{0, turn}}, kPredict);
  const int32_t adopted2 = paged->AdoptPrefix(2, turn, "");
  EXPECT_EQ(adopted2, 48);
  const RunOutput third = GenerateGreedy(*model_, *paged, {{2, turn, adopted2}}, kPredict, paged.get());
  EXPECT_EQ(third.requests[0].ids, want2.requests[0].ids);
  EXPECT_EQ(third.tokens_computed, 55 - 48 + kPredict - 1);

  // Another tenant's salt shares nothing.
  EXPECT_EQ(paged->AdoptPrefix(0, turn, "tenant-b"), 0);
  const kv::PrefixCacheStats& st = paged->prefix_cache().stats();
  EXPECT_EQ(st.tokens_queried, 45 + 55 + 55);
  EXPECT_EQ(st.tokens_hit, 32 + 48);
}

}  // namespace
}  // namespace pagoda
