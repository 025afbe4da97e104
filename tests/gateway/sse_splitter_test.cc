#include "gateway/sse_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pagoda::gateway {
namespace {

struct Got {
  std::vector<std::string> blocks, data;
};

Got FeedAll(SseSplitter& s, const std::vector<std::string>& pieces) {
  Got out;
  for (const auto& p : pieces) {
    s.Feed(p, [&](const SseEvent& e) {
      out.blocks.emplace_back(e.block);
      if (e.has_data) out.data.emplace_back(e.data);
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
    ASSERT_EQ(ev.data.size(), 3u) << cut;
    EXPECT_EQ(ev.data[0], "{\"a\":1}");
    EXPECT_EQ(ev.data[1], "x\ny");
    EXPECT_EQ(ev.data[2], "[DONE]");
    // Every event, the comment-only one too, framed as it came (CRs dropped).
    const std::vector<std::string> blocks = {"data: {\"a\":1}\n", ": comment\n", "data: x\ndata: y\n",
                                             "event: e\ndata: [DONE]\n"};
    EXPECT_EQ(ev.blocks, blocks) << cut;
    EXPECT_EQ(t.pending(), 0u);
  }
  auto partial = FeedAll(s, {"data: half"});
  EXPECT_TRUE(partial.blocks.empty());
  EXPECT_GT(s.pending(), 0u);
}

TEST(SseSplitterTest, OversizedEventIsRefused) {
  SseSplitter s(16);
  EXPECT_FALSE(s.Feed(std::string(64, 'x'), [](const SseEvent&) { return true; }));
  EXPECT_TRUE(s.overflowed());
}

TEST(SseSplitterTest, StopsWhenTheCallbackSaysSo) {
  SseSplitter s;
  int n = 0;
  EXPECT_FALSE(s.Feed("data: 1\n\ndata: 2\n\n", [&](const SseEvent&) { return ++n < 1; }));
  EXPECT_EQ(n, 1);
}

TEST(SseSplitterTest, KeepsEveryFieldInOrderAndReadsDataAsTheSpecSays) {
  // WHATWG HTML "event stream interpretation": "data" without a colon is an
  // empty data field; "data:x" needs no space; other fields are not data.
  SseSplitter s;
  auto ev = FeedAll(s, {"id: 7\nevent: delta\nretry: 500\n: note\ndata\ndata:x\ndatum: no\n\n"});
  ASSERT_EQ(ev.blocks.size(), 1u);
  EXPECT_EQ(ev.blocks[0], "id: 7\nevent: delta\nretry: 500\n: note\ndata\ndata:x\ndatum: no\n");
  ASSERT_EQ(ev.data.size(), 1u);
  EXPECT_EQ(ev.data[0], "\nx");
  // Blank lines between events carry no event.
  auto blanks = FeedAll(s, {"\n\n\nid: 1\n\n"});
  EXPECT_EQ(blanks.blocks, std::vector<std::string>{"id: 1\n"});
  EXPECT_TRUE(blanks.data.empty());
}

}  // namespace
}  // namespace pagoda::gateway
