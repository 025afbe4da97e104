#include "sampling/grammar/grammar_cache.h"
#include "sampling/grammar/matcher.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace pagoda::grammar {
namespace {

TEST(GrammarCacheTest, RepeatsReturnTheSameCompiledGrammar) {
  GrammarCache cache(2);
  auto a = cache.GetOrCompile("root ::= \"a\"");
  auto b = cache.GetOrCompile("root ::= \"a\"");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(cache.stats().misses, 1);
  // Same text, other root: another grammar.
  auto c = cache.GetOrCompile("root ::= \"a\"\nother ::= \"b\"", "other");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(Accepts(**c, "b"));
}

TEST(GrammarCacheTest, EvictsLeastRecentlyUsedAndNeverCachesErrors) {
  GrammarCache cache(2);
  auto a = *cache.GetOrCompile("root ::= \"a\"");
  (void)cache.GetOrCompile("root ::= \"b\"");
  (void)cache.GetOrCompile("root ::= \"a\"");  // a is now most recent
  (void)cache.GetOrCompile("root ::= \"c\"");  // evicts b
  EXPECT_EQ(cache.stats().size, 2u);
  EXPECT_EQ(cache.GetOrCompile("root ::= \"a\"")->get(), a.get());
  const int64_t misses = cache.stats().misses;
  (void)cache.GetOrCompile("root ::= \"b\"");
  EXPECT_EQ(cache.stats().misses, misses + 1);
  EXPECT_FALSE(cache.GetOrCompile("root ::= x").ok());
  EXPECT_FALSE(cache.GetOrCompile("root ::= x").ok());
  EXPECT_EQ(cache.stats().size, 2u);
}

TEST(GrammarCacheTest, ThreadsShareOneEntry) {
  GrammarCache cache(4);
  std::vector<std::thread> threads;
  std::vector<const Grammar*> got(8, nullptr);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) {
        auto g = cache.GetOrCompile("root ::= [a-z]+");
        ASSERT_TRUE(g.ok());
        if (k == 49) got[static_cast<size_t>(i)] = g->get();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Grammar* g : got) EXPECT_EQ(g, got[0]);
  EXPECT_EQ(cache.stats().size, 1u);
  EXPECT_EQ(cache.stats().hits + cache.stats().misses, 400);
}

}  // namespace
}  // namespace pagoda::grammar
