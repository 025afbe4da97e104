// RedisTier against a real redis-server of each test's own
// (support/redis_instance.h): round trips per KV type, sharing between
// replicas, isolation between models, refusal of bad records, Redis going
// away or hanging, the bounded queue. Skips only when redis-server is not
// installed.
#include "kv/redis_tier.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kv/tier_test_blocks.h"

#include "redis/redis_client.h"
#include "support/redis_instance.h"

namespace pagoda::kv {
namespace {

using kernels::KvType;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kModel = testing::kTestModel;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

BlockLayout Layout(uint64_t fingerprint = kModel, KvType type = KvType::kF16) {
  return testing::TestLayout(fingerprint, type);
}
using Block = testing::TestBlock;
Block MakeBlock(const BlockLayout& l, uint64_t id) { return testing::MakeTestBlock(l, id); }

bool RedisInstalled() { return std::system("command -v redis-server >/dev/null 2>&1") == 0; }

class RedisTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<::pagoda::testing::RedisServer>();
    if (!server_->ok()) {
      if (!RedisInstalled()) GTEST_SKIP() << server_->why();
      FAIL() << server_->why();
    }
    auto admin = redis::RedisClient::Create(server_->Uri());
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_ = std::move(admin).value();
  }

  RedisTierOptions Options(const BlockLayout& l = Layout()) const {
    RedisTierOptions o;
    o.url = server_->Uri();
    o.layout = l;
    return o;
  }
  std::unique_ptr<RedisTier> Open(const RedisTierOptions& o) const {
    auto t = RedisTier::Open(o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : nullptr;
  }
  static bool Put(KvTier& t, const Block& b) { return t.Put(b.hash, b.parent, b.tokens, b.payload.data()); }
  // Gets `b` and checks it bitwise.
  static void ExpectGet(KvTier& t, const Block& b) {
    std::vector<uint8_t> out(t.layout().block_bytes, 0);
    auto r = t.Get(b.hash, out.data());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(out, b.payload);
    EXPECT_EQ(r->hash, b.hash);
    EXPECT_EQ(r->parent, b.parent);
    EXPECT_EQ(r->tokens, b.tokens);
  }
  // The raw value of a key ("" when missing), and a raw write.
  std::string Raw(const std::string& key) const {
    auto r = admin_->CommandOk({"GET", key});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->bytes : "";
  }
  void SetRaw(const std::string& key, const std::string& value) const {
    ASSERT_TRUE(admin_->CommandOk({"SET", key, value}).ok());
  }
  bool Exists(const std::string& key) const { return admin_->Command({"EXISTS", key})->integer == 1; }
  int64_t Pttl(const std::string& key) const { return admin_->Command({"PTTL", key})->integer; }

  std::unique_ptr<::pagoda::testing::RedisServer> server_;
  std::unique_ptr<redis::RedisClient> admin_;
};

class RedisTierTypeTest : public RedisTierTest, public ::testing::WithParamInterface<KvType> {};

TEST_P(RedisTierTypeTest, RoundTripsABlockBitwise) {
  RedisTierOptions o = Options(Layout(kModel, GetParam()));
  o.ttl_ms = 3'600'000;
  auto t = Open(o);
  ASSERT_TRUE(t);
  const BlockLayout& l = t->layout();
  const Block b = MakeBlock(l, 1);
  ASSERT_TRUE(Put(*t, b));
  t->Flush();
  const std::string raw = Raw(t->KeyOf(b.hash));
  EXPECT_EQ(static_cast<int64_t>(raw.size()), l.RecordBytes());
  EXPECT_GT(Pttl(t->KeyOf(b.hash)), 3'500'000);
  EXPECT_LE(Pttl(t->KeyOf(b.hash)), 3'600'000);
  // The value is the block file record, checksum included.
  std::vector<uint8_t> decoded(l.block_bytes);
  auto rec = DecodeBlock(l, {reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}, decoded.data());
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(decoded, b.payload);

  EXPECT_TRUE(t->Contains(b.hash));
  ExpectGet(*t, b);
  const KvTierStats s = t->stats();
  EXPECT_EQ(s.writes, 1);
  EXPECT_EQ(s.write_bytes, l.RecordBytes());
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.read_bytes, l.RecordBytes());
  EXPECT_EQ(s.blocks, 1);
  EXPECT_EQ(s.bytes, l.RecordBytes());
  EXPECT_EQ(s.queued, 0);
  EXPECT_EQ(s.dropped, 0);
  EXPECT_EQ(s.corrupt, 0);
  EXPECT_GT(s.write_seconds, 0.0);
}

INSTANTIATE_TEST_SUITE_P(KvTypes, RedisTierTypeTest,
                         ::testing::Values(KvType::kF16, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8),
                         [](const ::testing::TestParamInfo<KvType>& p) {
                           switch (p.param) {
                             case KvType::kF16: return std::string("f16");
                             case KvType::kBf16: return std::string("bf16");
                             case KvType::kFp8E4M3: return std::string("fp8_e4m3");
                             case KvType::kInt8: return std::string("int8");
                             default: return std::string("other");
                           }
                         });

TEST_F(RedisTierTest, KeysNameTheModelAndTheBlock) {
  auto t = Open(Options());
  ASSERT_TRUE(t);
  const BlockHash h{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(t->KeyOf(h), "pagoda:kv:00c0ffee12345678:" + h.ToHex());
  EXPECT_EQ(t->name(), "redis");
}

TEST_F(RedisTierTest, AnotherReplicaSeesTheBlocksAndRefreshesTheirTtl) {
  RedisTierOptions o = Options();
  o.ttl_ms = 60'000;
  auto first = Open(o);
  o.ttl_ms = 3'600'000;
  auto second = Open(o);
  ASSERT_TRUE(first && second);
  const Block b = MakeBlock(first->layout(), 2);
  ASSERT_TRUE(Put(*first, b));
  first->Flush();
  EXPECT_LE(Pttl(first->KeyOf(b.hash)), 60'000);

  EXPECT_TRUE(second->Contains(b.hash));  // not written here: asked Redis
  ExpectGet(*second, b);
  EXPECT_EQ(second->stats().hits, 1);
  // The second replica evicts the same block: it is there already, so only
  // its TTL is refreshed (to the second replica's), nothing is sent.
  ASSERT_TRUE(Put(*second, b));
  second->Flush();
  const KvTierStats s = second->stats();
  EXPECT_EQ(s.writes, 0);
  EXPECT_EQ(s.dropped, 1);
  EXPECT_GT(Pttl(second->KeyOf(b.hash)), 60'000);
  ExpectGet(*first, b);
}

TEST_F(RedisTierTest, AnotherModelSeesNothing) {
  auto mine = Open(Options());
  auto other = Open(Options(Layout(kModel + 1)));
  ASSERT_TRUE(mine && other);
  const Block b = MakeBlock(mine->layout(), 3);
  ASSERT_TRUE(Put(*mine, b));
  mine->Flush();
  EXPECT_NE(mine->KeyOf(b.hash), other->KeyOf(b.hash));
  EXPECT_FALSE(other->Contains(b.hash));
  std::vector<uint8_t> out(other->layout().block_bytes, 0xEE);
  EXPECT_EQ(other->Get(b.hash, out.data()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0xEE));
  EXPECT_EQ(other->stats().misses, 1);
  EXPECT_TRUE(Exists(mine->KeyOf(b.hash)));  // left alone
  ExpectGet(*mine, b);
}

TEST_F(RedisTierTest, RefusesCountsAndDeletesBadRecords) {
  auto t = Open(Options());
  ASSERT_TRUE(t);
  const BlockLayout& l = t->layout();
  const Block b = MakeBlock(l, 4), other = MakeBlock(l, 5);
  ASSERT_TRUE(Put(*t, b));
  ASSERT_TRUE(Put(*t, other));
  t->Flush();
  const std::string key = t->KeyOf(b.hash);
  const std::string good = Raw(key);
  // The same block as a replica with a bf16 cache (same model, same record size) writes it.
  std::vector<uint8_t> bf16;
  EncodeBlock(Layout(kModel, KvType::kBf16), b.hash, b.parent, b.tokens, b.payload.data(), &bf16);

  struct Case {
    const char* what;
    std::function<void()> spoil;
    StatusCode code;
  };
  const Case cases[] = {
      {"garbage", [&] { SetRaw(key, "garbage"); }, StatusCode::kInvalidArgument},
      {"flipped payload byte",
       [&] {
         std::string v = good;
         v[96 + 4 * 4 + 17] ^= 0x10;
         SetRaw(key, v);
       },
       StatusCode::kDataLoss},
      {"flipped checksum byte",
       [&] {
         std::string v = good;
         v.back() ^= 0x01;
         SetRaw(key, v);
       },
       StatusCode::kDataLoss},
      {"truncated", [&] { SetRaw(key, good.substr(0, 150)); }, StatusCode::kInvalidArgument},
      {"one byte short", [&] { SetRaw(key, good.substr(0, good.size() - 1)); }, StatusCode::kInvalidArgument},
      {"trailing bytes", [&] { SetRaw(key, good + "x"); }, StatusCode::kInvalidArgument},
      {"another block's record", [&] { SetRaw(key, Raw(t->KeyOf(other.hash))); }, StatusCode::kInvalidArgument},
      {"another layout", [&] { SetRaw(key, std::string(bf16.begin(), bf16.end())); },
       StatusCode::kFailedPrecondition},
      {"not a string", [&] { ASSERT_TRUE(admin_->CommandOk({"DEL", key}).ok());
                             ASSERT_TRUE(admin_->CommandOk({"RPUSH", key, "x"}).ok()); },
       StatusCode::kInvalidArgument},
  };
  int64_t corrupt = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    c.spoil();
    EXPECT_TRUE(t->Contains(b.hash));
    std::vector<uint8_t> out(l.block_bytes, 0xEE);
    auto r = t->Get(b.hash, out.data());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0xEE));  // never served, not even in part
    EXPECT_FALSE(Exists(key));
    EXPECT_FALSE(t->Contains(b.hash));
    EXPECT_EQ(t->stats().corrupt, ++corrupt);
    EXPECT_EQ(t->Get(b.hash, out.data()).status().code(), StatusCode::kNotFound);
  }
  EXPECT_EQ(t->stats().hits, 0);
  ExpectGet(*t, other);  // untouched
  // Written again once gone.
  ASSERT_TRUE(Put(*t, b));
  t->Flush();
  ExpectGet(*t, b);
}

TEST_F(RedisTierTest, FailsCleanlyWhileRedisIsDownAndRecovers) {
  RedisTierOptions o = Options();
  o.retry_after_ms = 1'000;
  auto t = Open(o);
  ASSERT_TRUE(t);
  const BlockLayout& l = t->layout();
  const Block a = MakeBlock(l, 6), b = MakeBlock(l, 7), c = MakeBlock(l, 8);
  ASSERT_TRUE(Put(*t, a));
  t->Flush();
  ASSERT_TRUE(t->Contains(a.hash));

  server_->Kill();
  // Not known to be down yet: queued, and the writer fails to store it.
  EXPECT_TRUE(Put(*t, b));
  t->Flush();
  KvTierStats s = t->stats();
  EXPECT_EQ(s.writes, 1);
  EXPECT_EQ(s.dropped, 1);
  EXPECT_EQ(s.queued, 0);
  // Known to be down now: everything fails at once.
  const Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(Put(*t, c));
  EXPECT_FALSE(t->Contains(a.hash));
  std::vector<uint8_t> out(l.block_bytes, 0xEE);
  auto r = t->Get(a.hash, out.data());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find(server_->Uri()), std::string::npos) << r.status().message();
  EXPECT_LT(SecondsSince(t0), 0.1);
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0xEE));
  s = t->stats();
  EXPECT_EQ(s.dropped, 2);
  EXPECT_EQ(s.misses, 1);

  ASSERT_TRUE(server_->Restart());
  const Clock::time_point t1 = Clock::now();
  bool queued = false;
  while (!(queued = Put(*t, b)) && SecondsSince(t1) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(queued);
  t->Flush();
  EXPECT_EQ(t->stats().writes, 2);
  ExpectGet(*t, b);
  // The restarted server (no persistence) lost a: a miss, no longer a hint.
  EXPECT_EQ(t->Get(a.hash, out.data()).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(t->Contains(a.hash));
}

TEST_F(RedisTierTest, FailsFastWhenRedisHangs) {
  RedisTierOptions o = Options();
  o.timeout_ms = 200;
  o.retry_after_ms = 300;
  auto t = Open(o);
  ASSERT_TRUE(t);
  const Block a = MakeBlock(t->layout(), 9), b = MakeBlock(t->layout(), 10);
  ASSERT_TRUE(Put(*t, a));
  t->Flush();
  // Every command of every client waits 1.5 s: a server that hangs.
  ASSERT_TRUE(admin_->CommandOk({"CLIENT", "PAUSE", "1500", "ALL"}).ok());
  Clock::time_point t0 = Clock::now();
  std::vector<uint8_t> out(t->layout().block_bytes);
  auto r = t->Get(a.hash, out.data());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("timed out"), std::string::npos) << r.status().message();
  EXPECT_LT(SecondsSince(t0), 0.6);
  t0 = Clock::now();
  EXPECT_FALSE(t->Contains(b.hash));
  EXPECT_FALSE(Put(*t, b));
  EXPECT_LT(SecondsSince(t0), 0.05);
  // Back once the pause ends.
  bool got = false;
  while (!(got = t->Get(a.hash, out.data()).ok()) && SecondsSince(t0) < 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(got);
  EXPECT_EQ(out, a.payload);
}

TEST_F(RedisTierTest, FullQueueDropsAndQueuedBlocksAreServed) {
  RedisTierOptions o = Options();
  o.max_queued = 2;
  o.timeout_ms = 10'000;  // the writer waits out the pause below
  auto t = Open(o);
  ASSERT_TRUE(t);
  const BlockLayout& l = t->layout();
  const Block a = MakeBlock(l, 11), b = MakeBlock(l, 12), c = MakeBlock(l, 13);
  // Hold the writer: Redis blocks write commands (reads go on) until UNPAUSE.
  ASSERT_TRUE(admin_->CommandOk({"CLIENT", "PAUSE", "20000", "WRITE"}).ok());
  ASSERT_TRUE(Put(*t, a));
  EXPECT_TRUE(Put(*t, b));
  EXPECT_FALSE(Put(*t, c));  // full
  EXPECT_FALSE(Put(*t, b));  // queued already
  KvTierStats s = t->stats();
  EXPECT_EQ(s.queued, 2);
  EXPECT_EQ(s.dropped, 2);
  EXPECT_TRUE(t->Contains(a.hash));
  EXPECT_TRUE(t->Contains(b.hash));
  EXPECT_FALSE(t->Contains(c.hash));  // asked Redis (a read)
  ExpectGet(*t, a);  // from the queue, while its write is held
  ExpectGet(*t, b);
  EXPECT_EQ(t->stats().hits, 2);
  EXPECT_EQ(t->stats().read_bytes, 0);

  ASSERT_TRUE(admin_->CommandOk({"CLIENT", "UNPAUSE"}).ok());
  t->Flush();
  s = t->stats();
  EXPECT_EQ(s.queued, 0);
  EXPECT_EQ(s.writes, 2);
  EXPECT_EQ(s.dropped, 2);
  ExpectGet(*t, b);  // from Redis now
  EXPECT_EQ(t->stats().read_bytes, l.RecordBytes());
  EXPECT_TRUE(Exists(t->KeyOf(a.hash)));
  EXPECT_FALSE(Exists(t->KeyOf(c.hash)));
}

TEST_F(RedisTierTest, OpenRefusesBadOptionsAndAnUnreachableRedis) {
  RedisTierOptions o = Options();
  o.url = "redis://host:notaport";
  EXPECT_EQ(RedisTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.layout.block_bytes += 1;  // not what a pool of this layout has
  EXPECT_EQ(RedisTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.ttl_ms = 0;
  EXPECT_EQ(RedisTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.max_queued = 0;
  EXPECT_EQ(RedisTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.timeout_ms = 0;
  EXPECT_EQ(RedisTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.url = "redis://:secret@127.0.0.1:1";
  auto t = RedisTier::Open(o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kIoError);
  EXPECT_EQ(t.status().message().find("secret"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace pagoda::kv
