#include "gateway/capacity_schedule.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::gateway {
namespace {

using std::chrono::system_clock;
using json = nlohmann::json;

// A UTC instant. 2024-05-06 is a Monday.
system_clock::time_point Utc(int y, unsigned mo, unsigned d, int h, int mi, int s = 0) {
  using namespace std::chrono;
  return sys_days{year{y} / month{mo} / day{d}} + hours{h} + minutes{mi} + seconds{s};
}

const std::vector<ScheduleReplica> kReplicas = {
    {"a", "http://10.0.0.1:8000"}, {"b", "http://10.0.0.2:8000"}, {"c", "http://10.0.0.3:8000"}};

BoundSchedule MustBind(const json& j, const std::vector<ScheduleReplica>& replicas = kReplicas) {
  auto s = ScheduleFromJson(j);
  EXPECT_TRUE(s.ok()) << s.status().message();
  auto b = BoundSchedule::Bind(s.ok() ? *s : CapacitySchedule{}, replicas);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? std::move(b).value() : BoundSchedule{};
}

// The error Bind (or ScheduleFromJson) gives `j`; "" when it is accepted.
std::string ErrorOf(const json& j) {
  auto s = ScheduleFromJson(j);
  if (!s.ok()) return s.status().message();
  auto b = BoundSchedule::Bind(*s, kReplicas);
  return b.ok() ? "" : b.status().message();
}

std::vector<std::string> Names(const std::vector<Pool>& pools) {
  std::vector<std::string> out;
  for (Pool p : pools) out.push_back(PoolName(p));
  return out;
}

using V = std::vector<std::string>;

TEST(CapacityScheduleTest, ParsesClockTimes) {
  EXPECT_EQ(*ParseClockTime("00:00"), 0);
  EXPECT_EQ(*ParseClockTime("08:30"), 510);
  EXPECT_EQ(*ParseClockTime("23:59"), 1439);
  EXPECT_EQ(*ParseClockTime("24:00", /*end_of_day=*/true), 1440);
  for (const char* bad : {"24:00", "8:00", "08:0", "0800", "12:60", "25:00", "ab:cd", "", " 08:00", "08:00 "}) {
    EXPECT_FALSE(ParseClockTime(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseClockTime("24:01", true).ok());
  EXPECT_EQ(FormatClockTime(510), "08:30");
  EXPECT_EQ(FormatClockTime(1440), "24:00");
}

TEST(CapacityScheduleTest, TakesFixedOffsetsAndRefusesZoneNames) {
  EXPECT_EQ(*ParseUtcOffset("UTC"), 0);
  EXPECT_EQ(*ParseUtcOffset("Z"), 0);
  EXPECT_EQ(*ParseUtcOffset("+09:00"), 540);
  EXPECT_EQ(*ParseUtcOffset("-05:30"), -330);
  EXPECT_EQ(*ParseUtcOffset("+14:00"), 840);
  EXPECT_FALSE(ParseUtcOffset("+14:30").ok());
  EXPECT_FALSE(ParseUtcOffset("-12:30").ok());
  EXPECT_FALSE(ParseUtcOffset("+9:00").ok());
  EXPECT_FALSE(ParseUtcOffset("+09:60").ok());
  auto iana = ParseUtcOffset("Europe/Paris");
  ASSERT_FALSE(iana.ok());
  EXPECT_NE(iana.status().message().find("IANA"), std::string::npos) << iana.status().message();
  EXPECT_NE(iana.status().message().find("tzdb"), std::string::npos) << iana.status().message();
  EXPECT_EQ(FormatUtcOffset(0), "UTC");
  EXPECT_EQ(FormatUtcOffset(540), "+09:00");
  EXPECT_EQ(FormatUtcOffset(-330), "-05:30");
}

TEST(CapacityScheduleTest, MinuteOfWeekStartsMondayInTheZone) {
  EXPECT_EQ(MinuteOfWeek(Utc(2024, 5, 6, 0, 0), 0), 0);                       // Monday 00:00 UTC
  EXPECT_EQ(MinuteOfWeek(Utc(1970, 1, 1, 0, 0), 0), 3 * kMinutesPerDay);      // a Thursday
  EXPECT_EQ(MinuteOfWeek(Utc(2024, 5, 5, 15, 0), 540), 0);                    // Sunday 15:00 UTC = Monday 00:00 +09
  EXPECT_EQ(MinuteOfWeek(Utc(2024, 5, 6, 4, 59, 59), -300), 6 * kMinutesPerDay + 23 * 60 + 59);  // Sunday 23:59 -05
  EXPECT_EQ(MinuteOfWeek(Utc(1969, 12, 31, 23, 59), 0), 2 * kMinutesPerDay + 1439);  // before the epoch
}

TEST(CapacityScheduleTest, DaytimeWindowFollowsItsZone) {
  const BoundSchedule s = MustBind(
      {{"time_zone", "+09:00"}, {"windows", {{{"start", "08:00"}, {"end", "20:00"}, {"pool", "realtime"}, {"replicas", {"a"}}}}}});
  // 08:00 +09 is 23:00 UTC the day before.
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 6, 22, 59, 59))), (V{"shared", "shared", "shared"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 6, 23, 0))), (V{"realtime", "shared", "shared"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 7, 10, 59))), (V{"realtime", "shared", "shared"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 7, 11, 0))), (V{"shared", "shared", "shared"}));  // 20:00 +09: end is exclusive
}

TEST(CapacityScheduleTest, WindowEndingBeforeItStartsWrapsPastMidnight) {
  const BoundSchedule s = MustBind(
      {{"time_zone", "UTC"}, {"windows", {{{"start", "20:00"}, {"end", "08:00"}, {"pool", "batch"}, {"replicas", 2}}}}});
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 6, 19, 59))), (V{"shared", "shared", "shared"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 6, 20, 0))), (V{"batch", "batch", "shared"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 6, 23, 59))), (V{"batch", "batch", "shared"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 7, 0, 0))), (V{"batch", "batch", "shared"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 7, 7, 59))), (V{"batch", "batch", "shared"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 7, 8, 0))), (V{"shared", "shared", "shared"}));
}

TEST(CapacityScheduleTest, DaysAreTheZonesDaysNotUtcs) {
  // Mondays 00:00-06:00 in +09:00 begin on Sunday 15:00 UTC.
  const BoundSchedule s = MustBind({{"time_zone", "+09:00"},
                                    {"windows", {{{"days", {"mon"}}, {"start", "00:00"}, {"end", "06:00"},
                                                  {"pool", "realtime"}}}}});
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 5, 14, 59))[0], Pool::kShared);  // Sunday 23:59 there
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 5, 15, 0))[0], Pool::kRealtime);  // Monday 00:00 there, Sunday here
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 5, 20, 59))[0], Pool::kRealtime);
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 5, 21, 0))[0], Pool::kShared);
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 6, 0, 30))[0], Pool::kShared);  // Monday 00:30 UTC is 09:30 there
  // West of UTC: Fridays 22:00 to 02:00 in -05:00; the part past midnight is Saturday's morning.
  const BoundSchedule w = MustBind({{"time_zone", "-05:00"},
                                    {"windows", {{{"days", {"Friday"}}, {"start", "22:00"}, {"end", "02:00"},
                                                  {"pool", "batch"}}}}});
  EXPECT_EQ(w.PoolsAt(Utc(2024, 5, 11, 2, 59))[0], Pool::kShared);  // Fri 21:59 there
  EXPECT_EQ(w.PoolsAt(Utc(2024, 5, 11, 3, 0))[0], Pool::kBatch);    // Fri 22:00 there, Saturday in UTC
  EXPECT_EQ(w.PoolsAt(Utc(2024, 5, 11, 6, 59))[0], Pool::kBatch);   // Sat 01:59 there
  EXPECT_EQ(w.PoolsAt(Utc(2024, 5, 11, 7, 0))[0], Pool::kShared);
  EXPECT_EQ(w.PoolsAt(Utc(2024, 5, 10, 3, 0))[0], Pool::kShared);   // Thu 22:00 there
}

TEST(CapacityScheduleTest, SundayNightWrapsIntoMonday) {
  const BoundSchedule s = MustBind({{"time_zone", "UTC"},
                                    {"windows", {{{"days", {"sun"}}, {"start", "22:00"}, {"end", "02:00"},
                                                  {"pool", "batch"}}}}});
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 12, 23, 0))[0], Pool::kBatch);  // Sunday
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 13, 1, 59))[0], Pool::kBatch);  // Monday morning
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 13, 2, 0))[0], Pool::kShared);
  EXPECT_EQ(s.PoolsAt(Utc(2024, 5, 7, 1, 0))[0], Pool::kShared);  // a Tuesday morning
}

TEST(CapacityScheduleTest, ReplicasByCountIdOrUrl) {
  const BoundSchedule s = MustBind(
      {{"time_zone", "UTC"},
       {"windows", {{{"start", "00:00"}, {"end", "12:00"}, {"pool", "realtime"}, {"replicas", 1}},
                    {{"start", "00:00"}, {"end", "24:00"}, {"pool", "batch"}, {"replicas", {"http://10.0.0.3:8000", "b"}}}}}});
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 6, 6, 0))), (V{"realtime", "batch", "batch"}));
  EXPECT_EQ(Names(s.PoolsAt(Utc(2024, 5, 6, 18, 0))), (V{"shared", "batch", "batch"}));
}

TEST(CapacityScheduleTest, NextChangeSkipsBoundariesThatChangeNothing) {
  const BoundSchedule s = MustBind(
      {{"time_zone", "+09:00"},
       {"windows", {{{"start", "08:00"}, {"end", "12:00"}, {"pool", "realtime"}, {"replicas", {"a"}}},
                    {{"start", "12:00"}, {"end", "20:00"}, {"pool", "realtime"}, {"replicas", {"a"}}},
                    {{"start", "20:00"}, {"end", "08:00"}, {"pool", "batch"}, {"replicas", {"a", "b"}}}}}});
  const auto t = Utc(2024, 5, 6, 1, 30, 15);  // Monday 10:30:15 +09
  const auto next = s.NextChanges(t);
  ASSERT_EQ(next.size(), 3u);
  ASSERT_TRUE(next[0]);
  EXPECT_EQ(next[0]->pool, Pool::kBatch);
  EXPECT_EQ(FormatTimeAt(next[0]->at, 540), "2024-05-06T20:00:00+09:00");
  EXPECT_EQ(FormatTimeAt(next[0]->at, 0), "2024-05-06T11:00:00Z");
  ASSERT_TRUE(next[1]);
  EXPECT_EQ(next[1]->pool, Pool::kBatch);
  EXPECT_FALSE(next[2]);  // in no window: never changes
  // At the boundary the new pools hold, and the next change is the morning.
  const auto at8pm = s.NextChanges(next[0]->at);
  EXPECT_EQ(s.PoolsAt(next[0]->at)[0], Pool::kBatch);
  EXPECT_EQ(FormatTimeAt(at8pm[0]->at, 540), "2024-05-07T08:00:00+09:00");
  EXPECT_EQ(at8pm[0]->pool, Pool::kRealtime);
  EXPECT_EQ(at8pm[1]->pool, Pool::kShared);
}

TEST(CapacityScheduleTest, NextChangeOfAWeeklyWindowIsDaysAway) {
  const BoundSchedule s = MustBind({{"time_zone", "UTC"},
                                    {"windows", {{{"days", {"sat", "sun"}}, {"start", "00:00"}, {"end", "24:00"},
                                                  {"pool", "batch"}}}}});
  const auto next = s.NextChanges(Utc(2024, 5, 8, 12, 0));  // Wednesday
  ASSERT_TRUE(next[0]);
  EXPECT_EQ(FormatTimeAt(next[0]->at, 0), "2024-05-11T00:00:00Z");
  // Saturday's end meets Sunday's start: the pool stays batch through Monday 00:00.
  EXPECT_EQ(FormatTimeAt(s.NextChanges(Utc(2024, 5, 11, 1, 0))[0]->at, 0), "2024-05-13T00:00:00Z");
}

TEST(CapacityScheduleTest, RefusesOverlappingWindowsOnACommonReplica) {
  const std::string e = ErrorOf(
      {{"time_zone", "UTC"},
       {"windows", {{{"start", "08:00"}, {"end", "20:00"}, {"pool", "realtime"}},
                    {{"days", {"tue"}}, {"start", "19:00"}, {"end", "21:00"}, {"pool", "batch"}, {"replicas", {"c"}}}}}});
  EXPECT_NE(e.find("windows[0] and windows[1] overlap"), std::string::npos) << e;
  EXPECT_NE(e.find("'c'"), std::string::npos) << e;
  EXPECT_NE(e.find("tue 19:00"), std::string::npos) << e;
  // The part past midnight overlaps the next day's window.
  const std::string wrap = ErrorOf(
      {{"time_zone", "UTC"},
       {"windows", {{{"days", {"sun"}}, {"start", "22:00"}, {"end", "02:00"}, {"pool", "batch"}},
                    {{"days", {"mon"}}, {"start", "01:00"}, {"end", "03:00"}, {"pool", "realtime"}}}}});
  EXPECT_NE(wrap.find("overlap"), std::string::npos) << wrap;
  EXPECT_NE(wrap.find("mon 01:00"), std::string::npos) << wrap;
  // Counts overlap on their first replicas.
  EXPECT_NE(ErrorOf({{"time_zone", "UTC"},
                     {"windows", {{{"start", "08:00"}, {"end", "20:00"}, {"pool", "realtime"}, {"replicas", 1}},
                                  {{"start", "10:00"}, {"end", "11:00"}, {"pool", "batch"}, {"replicas", 2}}}}})
                .find("overlap"),
            std::string::npos);
  // Same hours on other replicas, other days, or meeting end to start: fine.
  EXPECT_EQ(ErrorOf({{"time_zone", "UTC"},
                     {"windows", {{{"start", "08:00"}, {"end", "20:00"}, {"pool", "realtime"}, {"replicas", {"a"}}},
                                  {{"start", "08:00"}, {"end", "20:00"}, {"pool", "batch"}, {"replicas", {"b"}}},
                                  {{"start", "20:00"}, {"end", "08:00"}, {"pool", "batch"}, {"replicas", {"a"}}}}}}),
            "");
  EXPECT_EQ(ErrorOf({{"time_zone", "UTC"},
                     {"windows", {{{"days", {"mon"}}, {"start", "08:00"}, {"end", "20:00"}, {"pool", "realtime"}},
                                  {{"days", {"tue"}}, {"start", "08:00"}, {"end", "20:00"}, {"pool", "batch"}}}}}),
            "");
}

TEST(CapacityScheduleTest, ErrorsNameTheField) {
  const json window = {{"start", "08:00"}, {"end", "20:00"}, {"pool", "realtime"}};
  auto with = [&](const std::string& key, const json& value) {
    json w = window;
    w[key] = value;
    return json{{"time_zone", "UTC"}, {"windows", {window, w}}};
  };
  struct Case {
    json schedule;
    std::string want;
  } cases[] = {
      {with("start", "8:00"), "windows[1].start: '8:00' is not HH:MM"},
      {with("end", "20:61"), "windows[1].end: '20:61'"},
      {with("start", 800), "windows[1].start: expected a string"},
      {with("end", "08:00"), "windows[1].end: equals the start"},
      {with("pool", "gold"), "windows[1].pool: \"gold\" is not realtime, batch or shared"},
      {with("days", json::array({"mon", "funday"})), "windows[1].days: \"funday\" is not a day"},
      {with("days", json::array({"mon", "mon"})), "windows[1].days: \"mon\" twice"},
      {with("days", json::array()), "windows[1].days: expected a non-empty array"},
      {with("replicas", 0), "windows[1].replicas: a count must be >= 1"},
      {with("replicas", 4), "windows[1].replicas: 4 replicas, but the deployment has 3"},
      {with("replicas", json::array({"zz"})), "windows[1].replicas: 'zz' is no replica"},
      {with("replicas", json::array({"a", "a"})), "windows[1].replicas: 'a' is named twice"},
      {with("replicas", "all"), "windows[1].replicas: expected a count"},
      {with("color", 1), "windows[1].color: unknown field"},
      {json{{"time_zone", "America/New_York"}, {"windows", {window}}}, "time_zone: 'America/New_York' is not a fixed"},
      {json{{"windows", {window}}}, "time_zone: required"},
      {json{{"time_zone", "UTC"}, {"windows", json::array()}}, "windows: required, a non-empty array"},
      {json{{"time_zone", "UTC"}, {"windows", {window}}, {"zone", 1}}, "zone: unknown field"},
      {json{{"time_zone", "UTC"}, {"windows", {{{"start", "08:00"}, {"end", "20:00"}}}}}, "windows[0].pool: missing"},
  };
  for (const Case& c : cases) {
    const std::string e = ErrorOf(c.schedule);
    EXPECT_NE(e.find(c.want), std::string::npos) << "want: " << c.want << "\n got: " << e;
  }
}

TEST(CapacityScheduleTest, JsonRoundTrips) {
  const json in = {{"time_zone", "-05:30"},
                   {"windows", {{{"days", {"mon", "fri"}}, {"start", "20:00"}, {"end", "24:00"}, {"pool", "batch"},
                                 {"replicas", 2}},
                                {{"days", {"tue"}}, {"start", "01:00"}, {"end", "02:00"}, {"pool", "shared"},
                                 {"replicas", {"a"}}}}}};
  auto s = ScheduleFromJson(in);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(ScheduleToJson(*s), in);
  // Days default to every day; replicas to all (left out).
  auto d = ScheduleFromJson({{"time_zone", "Z"}, {"windows", {{{"start", "00:00"}, {"end", "01:00"}, {"pool", "batch"}}}}});
  ASSERT_TRUE(d.ok());
  const json out = ScheduleToJson(*d);
  EXPECT_EQ(out["time_zone"], "UTC");
  EXPECT_EQ(out["windows"][0]["days"].size(), 7u);
  EXPECT_FALSE(out["windows"][0].contains("replicas"));
}

}  // namespace
}  // namespace pagoda::gateway
