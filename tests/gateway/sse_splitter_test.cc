#include "gateway/sse_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pagoda::gateway {
namespace {

std::vector<std::string> FeedAll(SseSplitter& s, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const auto& p : pieces) {
    s.Feed(p, [&](std::string_view d) {
      out.emplace_back(d);
      return true;
    });
  }
  return out;
}

TEST(SseSplitterTest, EmitsEachEventOnceItsBlankLineArrives) {
  SseSplitter s;
  const std::string stream = "data: {\"a\":1}\n\n: comment\n\ndata: x\r\ndata: y\r\n\r\nevent: e\ndata: [DONE]\n\n";
  // Every split point gives the same events.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseSplitter t;
    auto ev = FeedAll(t, {stream.substr(0, cut), stream.substr(cut)});
    ASSERT_EQ(ev.size(), 3u) << cut;
    EXPECT_EQ(ev[0], "{\"a\":1}");
    EXPECT_EQ(ev[1], "x\ny");
    EXPECT_EQ(ev[2], "[DONE]");
    EXPECT_EQ(t.pending(), 0u);
  }
  auto partial = FeedAll(s, {"data: half"});
  EXPECT_TRUE(partial.empty());
  EXPECT_GT(s.pending(), 0u);
}

TEST(SseSplitterTest, OversizedEventIsRefused) {
  SseSplitter s(16);
  EXPECT_FALSE(s.Feed(std::string(64, 'x'), [](std::string_view) { return true; }));
  EXPECT_TRUE(s.overflowed());
}

TEST(SseSplitterTest, StopsWhenTheCallbackSaysSo) {
  SseSplitter s;
  int n = 0;
  EXPECT_FALSE(s.Feed("data: 1\n\ndata: 2\n\n", [&](std::string_view) { return ++n < 1; }));
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace pagoda::gateway
