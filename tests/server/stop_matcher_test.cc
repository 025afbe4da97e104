#include "server/stop_matcher.h"

#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

TEST(StopMatcherTest, PassesTextThroughWithoutStops) {
  StopMatcher m({});
  EXPECT_EQ(m.Push("hello"), "hello");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, CutsAtStopStringInOnePush) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Push("abcENDdef"), "abc");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.Push("more"), "");
}

TEST(StopMatcherTest, CatchesStopStringSplitAcrossPushes) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Push("abcE"), "abc");
  EXPECT_EQ(m.Push("N"), "");
  EXPECT_EQ(m.Push("Dxyz"), "");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcherTest, ReleasesHeldTextWhenItCannotBecomeAStop) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Push("abE"), "ab");
  EXPECT_EQ(m.Push("X"), "EX");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.Push("EN"), "");
  EXPECT_EQ(m.Flush(), "EN");
}

TEST(StopMatcherTest, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo"});
  EXPECT_EQ(m.Push("hello world"), "hel");
}

}  // namespace
}  // namespace pagoda::server
