#include "engine/request_channel.h"

#include <thread>

#include <gtest/gtest.h>

namespace pagoda {
namespace {

EngineEvent Token(int32_t index, TokenId t) {
  EngineEvent e;
  e.index = index;
  e.token = t;
  return e;
}

EngineEvent Final(int32_t index) {
  EngineEvent e;
  e.index = index;
  e.finish = FinishReason::kLength;
  return e;
}

TEST(RequestChannelTest, EndsAfterTheFinalEventOfEverySequence) {
  RequestChannel ch("r", 2);
  ch.Push(Token(0, 5));
  ch.Push(Final(0));
  EXPECT_FALSE(ch.done());
  ch.Push(Final(1));
  EXPECT_EQ(ch.Pop()->token, 5);
  EXPECT_TRUE(ch.Pop()->is_final());
  EXPECT_TRUE(ch.Pop()->is_final());
  EXPECT_FALSE(ch.Pop().has_value());
  EXPECT_TRUE(ch.done());
}

TEST(RequestChannelTest, PopWaitsForTheEngineThread) {
  RequestChannel ch("r", 1);
  std::thread engine([&] {
    for (int i = 0; i < 100; ++i) ch.Push(Token(0, i));
    ch.Push(Final(0));
  });
  int n = 0;
  while (auto e = ch.Pop()) n += e->has_token();
  engine.join();
  EXPECT_EQ(n, 100);
}

TEST(RequestChannelTest, NotifiesOnPushAndAtOnceWhenEventsWait) {
  RequestChannel ch("r", 1);
  ch.Push(Token(0, 1));
  int calls = 0;
  ch.SetNotify([&] { ++calls; });
  EXPECT_EQ(calls, 1);
  ch.Push(Final(0));
  EXPECT_EQ(calls, 2);
}

TEST(RequestChannelTest, CancelIsVisibleToTheEngine) {
  RequestChannel ch("r", 1);
  EXPECT_FALSE(ch.cancelled());
  ch.Cancel();
  EXPECT_TRUE(ch.cancelled());
}

}  // namespace
}  // namespace pagoda
