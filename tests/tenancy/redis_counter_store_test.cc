// Redis specifics: the server going away mid-run (Acquire fails closed with a
// clear error), coming back (admits again, scripts reloaded), URL errors.
#include "tenancy/redis_counter_store.h"

#include <gtest/gtest.h>

#include "tenancy/counter_store_backends.h"

namespace pagoda::tenancy {
namespace {

TEST(RedisCounterStoreTest, FailsClosedWhileTheServerIsDownAndRecovers) {
  testing::Backend b("redis");
  if (!b.ok()) GTEST_SKIP() << b.why();
  CounterStoreOptions o;
  o.timeout_ms = 500;
  auto store = OpenRedisCounterStore(b.url(), o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<CounterRule> rules = {{"k:r", CounterKind::kRequests, 100, 1},
                                          {"k:r", CounterKind::kConcurrent, 100, 1}};
  ASSERT_TRUE((*store)->Acquire(rules, testing::kT0, "a")->admitted);

  b.redis()->Kill();
  for (int i = 0; i < 3; ++i) {
    auto r = (*store)->Acquire(rules, testing::kT0, "b");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kIoError);
    EXPECT_NE(r.status().message().find(b.url()), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE((*store)->Release({"k:r"}, "a").ok());

  ASSERT_TRUE(b.redis()->Restart());
  auto r = (*store)->Acquire(rules, testing::kT0, "c");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->admitted);
  // Without persistence the restarted server started from zero.
  EXPECT_EQ(r->readings[0].used, 1);
}

TEST(RedisCounterStoreTest, UnreachableServerIsAClearError) {
  CounterStoreOptions o;
  o.timeout_ms = 300;
  auto s = OpenRedisCounterStore("redis://127.0.0.1:1/0", o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kIoError);
  EXPECT_NE(s.status().message().find("connect"), std::string::npos) << s.status().message();
}

TEST(RedisCounterStoreTest, RejectsBadUrls) {
  EXPECT_EQ(OpenRedisCounterStore("redis://host:notaport").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenRedisCounterStore("redis://host:6379/x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenRedisCounterStore("http://host").status().code(), StatusCode::kInvalidArgument);
}

TEST(RedisCounterStoreTest, SelectsTheDatabaseInTheUrl) {
  testing::Backend b("redis");
  if (!b.ok()) GTEST_SKIP() << b.why();
  auto db0 = OpenRedisCounterStore(b.url());
  auto db3 = OpenRedisCounterStore(b.url() + "/3");
  ASSERT_TRUE(db0.ok() && db3.ok());
  ASSERT_TRUE((*db3)->Acquire({{"k:db", CounterKind::kRequests, 5, 1}}, testing::kT0, "")->admitted);
  EXPECT_EQ(*(*db3)->Used("k:db", CounterKind::kRequests, testing::kT0), 1);
  EXPECT_EQ(*(*db0)->Used("k:db", CounterKind::kRequests, testing::kT0), 0);
}

}  // namespace
}  // namespace pagoda::tenancy
