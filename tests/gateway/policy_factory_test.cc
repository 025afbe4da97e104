#include "gateway/policy_factory.h"

#include <gtest/gtest.h>

#include <vector>

#include "gateway/block_hasher.h"

namespace pagoda::gateway {
namespace {

TEST(PolicyFactoryTest, EveryNameBuildsItsPolicy) {
  for (const char* name : {"cache_aware", "least_loaded", "power_of_two", "round_robin", "session"}) {
    auto p = MakePolicy(name, ModelConfig{});
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ((*p)->name(), name);
  }
  EXPECT_FALSE(MakePolicy("random", ModelConfig{}).ok());
}

TEST(PolicyFactoryTest, CacheAwareReadsTheIndexItIsGivenAndKeepsItAlive) {
  auto index = std::make_shared<KvIndex>();
  std::vector<int32_t> tokens(33);
  for (int i = 0; i < 33; ++i) tokens[i] = i + 1;
  std::vector<std::string> engine = {"e0", "e1"};
  index->OnStored("b", std::nullopt, engine, std::span(tokens).first(32), 16);
  auto p = MakePolicy("cache_aware", ModelConfig{}, index);
  ASSERT_TRUE(p.ok());
  index.reset();  // the policy shares it
  ReplicaView a, b;
  a.id = "a", a.kv_events = true;
  b.id = "b", b.kv_events = true;
  const std::vector<ReplicaView> views = {a, b};
  RouteInput in;
  in.tokens = tokens;
  const RouteChoice c = (*p)->Pick(in, views);
  EXPECT_EQ(c.index, 1u);
  EXPECT_EQ(c.predicted_cached_tokens, 32);
}

}  // namespace
}  // namespace pagoda::gateway
