// CapacitySchedule: when each replica of one deployment serves which pool
// (pool.h). A schedule is a fixed UTC offset and a list of windows; a window
// names days of the week (default: every day), a local start and end
// ("HH:MM"; an end before the start wraps past midnight into the next day,
// and the days name the day a window starts on), a pool, and the replicas it
// moves (the deployment's first N, or a list of ids or URLs; default: all).
// A replica inside no window is in the shared pool.
//
// Time zones are fixed offsets only ("UTC", "+09:00", "-05:30"): IANA names
// ("Europe/Paris") with their daylight-saving rules would need a time zone
// database, which libstdc++ 12 (Debian 12) does not provide
// (std::chrono::tzdb), and we do not vendor one. An operator in a zone with
// DST changes the offset twice a year.
//
// BoundSchedule is a schedule bound to a deployment's replicas: validated
// (no replica in two windows at once) and evaluated as a pure function of
// the time point. Values; thread safety: const methods from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "gateway/pool.h"

namespace pagoda::gateway {

inline constexpr int kMinutesPerDay = 24 * 60;
inline constexpr int kMinutesPerWeek = 7 * kMinutesPerDay;
inline constexpr uint8_t kEveryDay = 0x7f;

// "HH:MM" -> minutes after midnight (00:00-23:59; with `end_of_day` also
// "24:00"). The error says what was expected, not which field: callers add it.
Result<int> ParseClockTime(std::string_view s, bool end_of_day = false);
std::string FormatClockTime(int minutes);  // "08:00"; 1440 -> "24:00"
// "UTC" / "Z" -> 0; "+HH:MM" / "-HH:MM" (-12:00..+14:00) -> minutes east of
// UTC. IANA names are refused, saying why.
Result<int> ParseUtcOffset(std::string_view s);
std::string FormatUtcOffset(int minutes);  // 0 -> "UTC", 540 -> "+09:00"
// "mon".."sun" or "monday".."sunday", any case -> 0 (Monday)..6.
std::optional<int> ParseWeekday(std::string_view s);
const char* WeekdayName(int day);  // 0 -> "mon"

struct ScheduleWindow {
  uint8_t days = kEveryDay;  // bit d: weekday d (0 = Monday), in the schedule's zone
  int start = 0;             // minutes after local midnight, [0, 1440)
  int end = 0;               // [0, 1440]; end < start wraps past midnight; end == start is refused
  Pool pool = Pool::kShared;
  int count = 0;                      // > 0: the deployment's first `count` replicas (config order)
  std::vector<std::string> replicas;  // else these ids or URLs; both empty: every replica
};

struct CapacitySchedule {
  int utc_offset_minutes = 0;
  std::vector<ScheduleWindow> windows;
};

// The admin API's form: {"time_zone": "+09:00", "windows": [{"days": ["mon",
// ...], "start": "08:00", "end": "20:00", "pool": "realtime", "replicas": 2
// or ["id", ...]}]}. Errors name the field ("windows[1].start: ...");
// unknown fields are refused. Checks the values, not the replicas: Bind does.
Result<CapacitySchedule> ScheduleFromJson(const nlohmann::json& j);
nlohmann::json ScheduleToJson(const CapacitySchedule& s);

// The replicas of the deployment a schedule is bound to, in config order.
struct ScheduleReplica {
  std::string id;
  std::string url;
};

struct PoolChange {
  Pool pool = Pool::kShared;
  std::chrono::system_clock::time_point at;
};

class BoundSchedule {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  // Errors: a window names an unknown replica, one twice, or more replicas
  // than the deployment has; two windows hold one replica at the same time
  // of the week. `bad_window` (optional) gets the index of the window at fault.
  static Result<BoundSchedule> Bind(CapacitySchedule schedule, const std::vector<ScheduleReplica>& replicas,
                                    size_t* bad_window = nullptr);

  // [replica] -> its pool at `t`.
  std::vector<Pool> PoolsAt(TimePoint t) const;
  // [replica] -> the first time after `t` its pool changes, and to what;
  // nullopt when it never does.
  std::vector<std::optional<PoolChange>> NextChanges(TimePoint t) const;

  const CapacitySchedule& schedule() const { return schedule_; }
  size_t replica_count() const { return replica_count_; }

 private:
  struct Span {
    int begin = 0, end = 0;  // [begin, end) minutes of the local week, Monday 00:00 = 0
    size_t window = 0;
  };
  std::vector<Pool> PoolsAtMinute(int minute_of_week) const;

  CapacitySchedule schedule_;
  size_t replica_count_ = 0;
  std::vector<std::vector<size_t>> members_;  // [window] -> replica indices
  std::vector<Span> spans_;
};

// The local minute of the week (Monday 00:00 = 0) at `t`, `offset` minutes east of UTC.
int MinuteOfWeek(std::chrono::system_clock::time_point t, int utc_offset_minutes);

// RFC 3339 with the offset: "2024-05-01T20:00:00+09:00" ("Z" for UTC).
std::string FormatTimeAt(std::chrono::system_clock::time_point t, int utc_offset_minutes);

}  // namespace pagoda::gateway
