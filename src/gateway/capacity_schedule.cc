#include "gateway/capacity_schedule.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

namespace pagoda::gateway {
namespace {

using Clock = std::chrono::system_clock;

constexpr const char* kDayNames[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
constexpr const char* kLongDayNames[] = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"};

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool TwoDigits(std::string_view s, int* out) {
  if (s.size() != 2 || !std::isdigit(static_cast<unsigned char>(s[0])) ||
      !std::isdigit(static_cast<unsigned char>(s[1]))) {
    return false;
  }
  *out = (s[0] - '0') * 10 + (s[1] - '0');
  return true;
}

// "Mon 08:00" for a minute of the week.
std::string WeekMinuteName(int m) {
  return std::string(kDayNames[m / kMinutesPerDay]) + " " + FormatClockTime(m % kMinutesPerDay);
}

std::string Field(size_t window, const char* key) {
  return "windows[" + std::to_string(window) + "]." + key;
}

Result<ScheduleWindow> WindowFromJson(const nlohmann::json& w, size_t i) {
  if (!w.is_object()) return InvalidArgument("windows[" + std::to_string(i) + "]: expected an object");
  for (const auto& [key, value] : w.items()) {
    if (key != "days" && key != "start" && key != "end" && key != "pool" && key != "replicas") {
      return InvalidArgument(Field(i, key.c_str()) + ": unknown field (days, start, end, pool, replicas)");
    }
  }
  ScheduleWindow win;
  if (const auto d = w.find("days"); d != w.end()) {
    if (!d->is_array() || d->empty()) {
      return InvalidArgument(Field(i, "days") + ": expected a non-empty array of days (\"mon\"..\"sun\"); omit it "
                                                "for every day");
    }
    win.days = 0;
    for (const auto& day : *d) {
      const auto n = day.is_string() ? ParseWeekday(day.get<std::string>()) : std::nullopt;
      if (!n) return InvalidArgument(Field(i, "days") + ": " + day.dump() + " is not a day (\"mon\"..\"sun\")");
      if (win.days & (1u << *n)) return InvalidArgument(Field(i, "days") + ": " + day.dump() + " twice");
      win.days |= static_cast<uint8_t>(1u << *n);
    }
  }
  for (const auto& [key, out, end_of_day] : {std::tuple<const char*, int*, bool>{"start", &win.start, false},
                                             std::tuple<const char*, int*, bool>{"end", &win.end, true}}) {
    const auto v = w.find(key);
    if (v == w.end()) return InvalidArgument(Field(i, key) + ": missing (\"HH:MM\")");
    if (!v->is_string()) return InvalidArgument(Field(i, key) + ": expected a string \"HH:MM\"");
    auto t = ParseClockTime(v->get<std::string>(), end_of_day);
    if (!t.ok()) return InvalidArgument(Field(i, key) + ": " + t.status().message());
    *out = *t;
  }
  if (win.start == win.end) {
    return InvalidArgument(Field(i, "end") + ": equals the start (an empty window; 00:00 to 24:00 is all day)");
  }
  const auto p = w.find("pool");
  if (p == w.end()) return InvalidArgument(Field(i, "pool") + ": missing (realtime, batch or shared)");
  const auto pool = p->is_string() ? ParsePool(p->get<std::string>()) : std::nullopt;
  if (!pool) return InvalidArgument(Field(i, "pool") + ": " + p->dump() + " is not realtime, batch or shared");
  win.pool = *pool;
  if (const auto r = w.find("replicas"); r != w.end()) {
    if (r->is_number_integer()) {
      const int64_t n = r->get<int64_t>();
      if (n < 1 || n > 100000) return InvalidArgument(Field(i, "replicas") + ": a count must be >= 1");
      win.count = static_cast<int>(n);
    } else if (r->is_array() && !r->empty()) {
      for (const auto& id : *r) {
        if (!id.is_string() || id.get_ref<const std::string&>().empty()) {
          return InvalidArgument(Field(i, "replicas") + ": expected replica ids or URLs (strings)");
        }
        win.replicas.push_back(id.get<std::string>());
      }
    } else {
      return InvalidArgument(Field(i, "replicas") + ": expected a count (>= 1) or a non-empty list of replica ids; "
                                                    "omit it for every replica");
    }
  }
  return win;
}

}  // namespace

Result<int> ParseClockTime(std::string_view s, bool end_of_day) {
  int h = 0, m = 0;
  const std::string expected = end_of_day ? "HH:MM, 00:00 to 24:00" : "HH:MM, 00:00 to 23:59";
  if (s.size() != 5 || s[2] != ':' || !TwoDigits(s.substr(0, 2), &h) || !TwoDigits(s.substr(3, 2), &m)) {
    return InvalidArgument("'" + std::string(s) + "' is not " + expected);
  }
  if (end_of_day && h == 24 && m == 0) return kMinutesPerDay;
  if (h > 23 || m > 59) return InvalidArgument("'" + std::string(s) + "' is out of range (" + expected + ")");
  return h * 60 + m;
}

std::string FormatClockTime(int minutes) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%02d:%02d", minutes / 60, minutes % 60);
  return buf;
}

Result<int> ParseUtcOffset(std::string_view s) {
  if (s == "UTC" || s == "Z" || s == "utc") return 0;
  int h = 0, m = 0;
  if (s.size() == 6 && (s[0] == '+' || s[0] == '-') && s[3] == ':' && TwoDigits(s.substr(1, 2), &h) &&
      TwoDigits(s.substr(4, 2), &m) && m < 60) {
    const int minutes = (s[0] == '-' ? -1 : 1) * (h * 60 + m);
    if (minutes < -12 * 60 || minutes > 14 * 60) {
      return InvalidArgument("'" + std::string(s) + "' is out of range (-12:00 to +14:00)");
    }
    return minutes;
  }
  return InvalidArgument("'" + std::string(s) +
                         "' is not a fixed UTC offset (\"UTC\", \"+09:00\", \"-05:30\"); IANA zone names are not "
                         "supported: this build has no time zone database (libstdc++ 12 lacks std::chrono::tzdb), so "
                         "daylight-saving changes mean changing the offset");
}

std::string FormatUtcOffset(int minutes) {
  if (minutes == 0) return "UTC";
  const int a = std::abs(minutes);
  return std::string(minutes < 0 ? "-" : "+") + FormatClockTime(a);
}

std::optional<int> ParseWeekday(std::string_view s) {
  std::string lower(s);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int d = 0; d < 7; ++d) {
    if (lower == kDayNames[d] || lower == kLongDayNames[d]) return d;
  }
  return std::nullopt;
}

const char* WeekdayName(int day) { return kDayNames[((day % 7) + 7) % 7]; }

Result<CapacitySchedule> ScheduleFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("expected a JSON object {\"time_zone\": ..., \"windows\": [...]}");
  for (const auto& [key, value] : j.items()) {
    if (key != "time_zone" && key != "windows") return InvalidArgument(key + ": unknown field (time_zone, windows)");
  }
  CapacitySchedule s;
  const auto tz = j.find("time_zone");
  if (tz == j.end() || !tz->is_string()) {
    return InvalidArgument("time_zone: required, a fixed UTC offset (\"UTC\", \"+09:00\", \"-05:00\")");
  }
  auto offset = ParseUtcOffset(tz->get<std::string>());
  if (!offset.ok()) return InvalidArgument("time_zone: " + offset.status().message());
  s.utc_offset_minutes = *offset;
  const auto ws = j.find("windows");
  if (ws == j.end() || !ws->is_array() || ws->empty()) {
    return InvalidArgument("windows: required, a non-empty array (DELETE removes a schedule)");
  }
  for (size_t i = 0; i < ws->size(); ++i) {
    auto w = WindowFromJson((*ws)[i], i);
    if (!w.ok()) return w.status();
    s.windows.push_back(std::move(w).value());
  }
  return s;
}

nlohmann::json ScheduleToJson(const CapacitySchedule& s) {
  nlohmann::json windows = nlohmann::json::array();
  for (const ScheduleWindow& w : s.windows) {
    nlohmann::json days = nlohmann::json::array();
    for (int d = 0; d < 7; ++d) {
      if (w.days & (1u << d)) days.push_back(kDayNames[d]);
    }
    nlohmann::json o = {{"days", days},
                        {"start", FormatClockTime(w.start)},
                        {"end", FormatClockTime(w.end)},
                        {"pool", PoolName(w.pool)}};
    if (w.count > 0) {
      o["replicas"] = w.count;
    } else if (!w.replicas.empty()) {
      o["replicas"] = w.replicas;
    }
    windows.push_back(std::move(o));
  }
  return {{"time_zone", FormatUtcOffset(s.utc_offset_minutes)}, {"windows", windows}};
}

Result<BoundSchedule> BoundSchedule::Bind(CapacitySchedule schedule, const std::vector<ScheduleReplica>& replicas,
                                          size_t* bad_window) {
  BoundSchedule b;
  b.replica_count_ = replicas.size();
  auto fail = [&](size_t window, const std::string& message) -> Status {
    if (bad_window != nullptr) *bad_window = window;
    return InvalidArgument(message);
  };
  for (size_t i = 0; i < schedule.windows.size(); ++i) {
    const ScheduleWindow& w = schedule.windows[i];
    if (w.days == 0 || w.days > kEveryDay) return fail(i, Field(i, "days") + ": no day");
    if (w.start < 0 || w.start >= kMinutesPerDay) return fail(i, Field(i, "start") + ": out of range");
    if (w.end < 0 || w.end > kMinutesPerDay || w.end == w.start) {
      return fail(i, Field(i, "end") + ": out of range or equal to the start");
    }
    std::vector<size_t> members;
    if (w.count > 0) {
      if (static_cast<size_t>(w.count) > replicas.size()) {
        return fail(i, Field(i, "replicas") + ": " + std::to_string(w.count) + " replicas, but the deployment has " +
                           std::to_string(replicas.size()));
      }
      for (size_t r = 0; r < static_cast<size_t>(w.count); ++r) members.push_back(r);
    } else if (!w.replicas.empty()) {
      for (const std::string& name : w.replicas) {
        size_t found = replicas.size();
        for (size_t r = 0; r < replicas.size() && found == replicas.size(); ++r) {
          if (replicas[r].id == name) found = r;
        }
        for (size_t r = 0; r < replicas.size() && found == replicas.size(); ++r) {
          if (replicas[r].url == name) found = r;
        }
        if (found == replicas.size()) {
          return fail(i, Field(i, "replicas") + ": '" + name + "' is no replica of this deployment");
        }
        if (std::find(members.begin(), members.end(), found) != members.end()) {
          return fail(i, Field(i, "replicas") + ": '" + name + "' is named twice");
        }
        members.push_back(found);
      }
    } else {
      for (size_t r = 0; r < replicas.size(); ++r) members.push_back(r);
    }
    b.members_.push_back(std::move(members));
    for (int d = 0; d < 7; ++d) {
      if ((w.days & (1u << d)) == 0) continue;
      const int day = d * kMinutesPerDay;
      if (w.end > w.start) {
        b.spans_.push_back({day + w.start, day + w.end, i});
      } else {
        // Past midnight: the rest of day d, then the next day's morning (Sunday's into Monday's).
        b.spans_.push_back({day + w.start, day + kMinutesPerDay, i});
        const int next = ((d + 1) % 7) * kMinutesPerDay;
        if (w.end > 0) b.spans_.push_back({next, next + w.end, i});
      }
    }
  }
  for (size_t x = 0; x < b.spans_.size(); ++x) {
    for (size_t y = x + 1; y < b.spans_.size(); ++y) {
      const Span& a = b.spans_[x];
      const Span& c = b.spans_[y];
      if (a.window == c.window || a.begin >= c.end || c.begin >= a.end) continue;
      for (size_t r : b.members_[a.window]) {
        const auto& other = b.members_[c.window];
        if (std::find(other.begin(), other.end(), r) == other.end()) continue;
        const size_t first = std::min(a.window, c.window), second = std::max(a.window, c.window);
        return fail(second, "windows[" + std::to_string(first) + "] and windows[" + std::to_string(second) +
                                "] overlap: both hold replica '" + replicas[r].id + "' at " +
                                WeekMinuteName(std::max(a.begin, c.begin)) + " (a replica is in one pool at a time)");
      }
    }
  }
  b.schedule_ = std::move(schedule);
  return b;
}

std::vector<Pool> BoundSchedule::PoolsAtMinute(int minute_of_week) const {
  std::vector<Pool> pools(replica_count_, Pool::kShared);
  for (const Span& s : spans_) {
    if (minute_of_week < s.begin || minute_of_week >= s.end) continue;
    for (size_t r : members_[s.window]) pools[r] = schedule_.windows[s.window].pool;
  }
  return pools;
}

std::vector<Pool> BoundSchedule::PoolsAt(TimePoint t) const {
  return PoolsAtMinute(MinuteOfWeek(t, schedule_.utc_offset_minutes));
}

std::vector<std::optional<PoolChange>> BoundSchedule::NextChanges(TimePoint t) const {
  const int now = MinuteOfWeek(t, schedule_.utc_offset_minutes);
  const std::vector<Pool> current = PoolsAtMinute(now);
  // Pools change only at span boundaries: visit them in the order they come.
  std::set<int> deltas;
  for (const Span& s : spans_) {
    for (int b : {s.begin, s.end}) {
      const int d = ((b - now) % kMinutesPerWeek + kMinutesPerWeek) % kMinutesPerWeek;
      deltas.insert(d == 0 ? kMinutesPerWeek : d);
    }
  }
  const TimePoint minute_start = std::chrono::floor<std::chrono::minutes>(t);
  std::vector<std::optional<PoolChange>> out(replica_count_);
  size_t left = replica_count_;
  for (int d : deltas) {
    if (left == 0) break;
    const std::vector<Pool> then = PoolsAtMinute((now + d) % kMinutesPerWeek);
    for (size_t r = 0; r < replica_count_; ++r) {
      if (out[r] || then[r] == current[r]) continue;
      out[r] = PoolChange{then[r], minute_start + std::chrono::minutes(d)};
      --left;
    }
  }
  return out;
}

int MinuteOfWeek(std::chrono::system_clock::time_point t, int utc_offset_minutes) {
  const int64_t minutes =
      std::chrono::floor<std::chrono::minutes>(t).time_since_epoch().count() + utc_offset_minutes;
  const int64_t day = FloorDiv(minutes, kMinutesPerDay);
  const int64_t weekday = ((day + 3) % 7 + 7) % 7;  // 1970-01-01 was a Thursday (3)
  return static_cast<int>(weekday * kMinutesPerDay + (minutes - day * kMinutesPerDay));
}

std::string FormatTimeAt(std::chrono::system_clock::time_point t, int utc_offset_minutes) {
  const std::time_t secs = static_cast<std::time_t>(
      std::chrono::floor<std::chrono::seconds>(t).time_since_epoch().count() + int64_t{utc_offset_minutes} * 60);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf) + (utc_offset_minutes == 0 ? "Z" : FormatUtcOffset(utc_offset_minutes));
}

}  // namespace pagoda::gateway
