// Capacity schedules on an in-process gateway in front of in-process
// upstreams, driven by a fake wall clock: replicas move from the realtime to
// the batch pool at 20:00 in the schedule's zone and back at 08:00 while
// streams and requests are in flight (none fails; each class lands only on
// its pool's replicas after each switch), the admin endpoints (GET, PUT,
// DELETE, their errors, a reload restoring the config's schedules) and the
// metrics.
#include "gateway/schedule_admin.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "gateway/gateway.h"
#include "http/client.h"
#include "http/server.h"

namespace pagoda::gateway {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using std::chrono::system_clock;

// /health; chat answers {"tag"}; a stream sends one event, waits for `gate`,
// then two more and [DONE].
class Upstream {
 public:
  Upstream(std::string tag, std::shared_future<void> gate) : tag_(std::move(tag)), gate_(std::move(gate)) {
    http::Router r;
    r.Add("GET", "/health", http::SyncHandler([](const http::Request&) { return http::Response::Json(200, "{}"); }));
    r.Add("POST", "/v1/chat/completions",
          http::Handler([this](const http::Request& req, std::shared_ptr<http::ResponseWriter> w) {
            if (!json::parse(req.body).value("stream", false)) {
              w->Respond(http::Response::Json(200, json{{"tag", tag_}}.dump()));
              return;
            }
            std::thread([this, w] {
              w->SendSse(json{{"tag", tag_}, {"i", 0}}.dump());
              ++streams;
              gate_.wait_for(20s);
              for (int i = 1; i < 3; ++i) w->SendSse(json{{"tag", tag_}, {"i", i}}.dump());
              w->SendSse("[DONE]");
              w->EndSse();
            }).detach();
          }));
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, std::move(r));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~Upstream() { server_->Shutdown(1s); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  std::atomic<int> streams{0};

 private:
  std::string tag_;
  std::shared_future<void> gate_;
  std::unique_ptr<http::Server> server_;
};

// UTC instants: Monday 2024-05-06 19:59 in +09:00 is 10:59 UTC.
system_clock::time_point Utc(int d, int h, int m) {
  using namespace std::chrono;
  return sys_days{year{2024} / May / day{static_cast<unsigned>(d)}} + hours{h} + minutes{m};
}

// Realtime by day on r1 and r2, batch on r3; at night r2 joins the batch pool.
const char* kSchedule = R"(
[models.deployments.schedule]
time_zone = "+09:00"
[[models.deployments.schedule.windows]]
start = "08:00"
end = "20:00"
pool = "realtime"
replicas = ["r1", "r2"]
[[models.deployments.schedule.windows]]
start = "00:00"
end = "24:00"
pool = "batch"
replicas = ["r3"]
[[models.deployments.schedule.windows]]
start = "20:00"
end = "08:00"
pool = "realtime"
replicas = ["r1"]
[[models.deployments.schedule.windows]]
start = "20:00"
end = "08:00"
pool = "batch"
replicas = ["r2"]
)";

class ScheduleAdminTest : public ::testing::Test {
 protected:
  ScheduleAdminTest() : gate_(release_.get_future().share()) {
    for (const char* tag : {"r1", "r2", "r3"}) upstreams_.push_back(std::make_unique<Upstream>(tag, gate_));
    admin_.Add("Authorization", "Bearer admin-secret");
  }
  ~ScheduleAdminTest() override {
    if (!released_) release_.set_value();
    for (auto& t : streams_) t.join();
    if (gw_) gw_->Shutdown(1s);
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  std::string Toml(const std::string& schedule) const {
    std::string s = "[gateway]\nadmin_key_env = \"GW_TEST_ADMIN\"\nallow_insecure_keys = true\n"
                    "[[models]]\nname = \"m\"\npolicy = \"least_loaded\"\n[[models.deployments]]\nversion = \"v1\"\n";
    for (size_t i = 0; i < upstreams_.size(); ++i) {
      s += "[[models.deployments.replicas]]\nurl = \"" + upstreams_[i]->url() + "\"\nname = \"r" +
           std::to_string(i + 1) + "\"\n";
    }
    return s + schedule;
  }
  void StartGateway(const std::string& schedule) {
    path_ = (std::filesystem::temp_directory_path() / ("pagoda_sched_test_" + std::to_string(::getpid()) + ".toml"))
                .string();
    std::ofstream(path_) << Toml(schedule);
    GatewayOptions o;
    o.config_path = path_;
    o.listen_override = "127.0.0.1:0";
    o.health_checks = false;
    o.env = [](const std::string& n) -> std::optional<std::string> {
      if (n == "GW_TEST_ADMIN") return "admin-secret";
      return std::nullopt;
    };
    o.wall_clock = [this] { return now_.load(); };
    auto g = Gateway::Create(o);
    ASSERT_TRUE(g.ok()) << g.status().message();
    gw_ = std::move(g).value();
    ASSERT_TRUE(gw_->Start().ok());
    client_ = std::make_unique<http::Client>("127.0.0.1", gw_->port(), 10s);
  }
  void SetClock(system_clock::time_point t) {
    now_ = t;
    gw_->schedules().Apply();  // the ticker would within a second
  }

  // A non-streamed chat of class `tier` (in the body, or the header); the replica that answered, or "error N".
  std::string Chat(http::Client& c, const std::string& tier, bool header = false) {
    json body = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
    http::Headers h;
    if (header) {
      h.Add("x-pagoda-service-tier", tier);
    } else if (!tier.empty()) {
      body["service_tier"] = tier;
    }
    auto r = c.Send("POST", "/v1/chat/completions", body.dump(), h);
    if (!r.ok()) return "error " + r.status().message();
    if (r->status != 200) return "error " + std::to_string(r->status);
    return json::parse(r->body).value("tag", "?");
  }
  std::string Chat(const std::string& tier, bool header = false) { return Chat(*client_, tier, header); }

  struct StreamResult {
    int status = 0;
    std::string replica;
    std::vector<std::string> events;
  };
  // Starts a stream of class `tier` on a thread of its own and waits until
  // its upstream has sent the first event (it then waits for the gate).
  std::shared_ptr<StreamResult> StartStream(const std::string& tier) {
    auto out = std::make_shared<StreamResult>();
    int before = 0;
    for (const auto& u : upstreams_) before += u->streams.load();
    const uint16_t port = gw_->port();
    streams_.emplace_back([out, tier, port] {
      http::Client c("127.0.0.1", port, 30s);
      const json body = {{"model", "m"}, {"stream", true}, {"service_tier", tier}, {"messages", json::array()}};
      auto r = c.SendSse("POST", "/v1/chat/completions", body.dump(), [&](std::string_view d) {
        out->events.emplace_back(d);
        return true;
      });
      if (!r.ok()) return;
      out->status = r->status;
      if (const std::string* rep = r->headers.Find("x-pagoda-replica")) out->replica = *rep;
    });
    for (int i = 0; i < 1000; ++i) {
      int now = 0;
      for (const auto& u : upstreams_) now += u->streams.load();
      if (now > before) break;
      std::this_thread::sleep_for(5ms);
    }
    return out;
  }
  // Which replica holds the stream now (while held: from the upstreams' counts).
  std::string HeldOn(const std::vector<int>& before) const {
    for (size_t i = 0; i < upstreams_.size(); ++i) {
      if (upstreams_[i]->streams.load() > before[i]) return "r" + std::to_string(i + 1);
    }
    return "?";
  }
  std::vector<int> StreamCounts() const {
    std::vector<int> v;
    for (const auto& u : upstreams_) v.push_back(u->streams.load());
    return v;
  }
  // Requests of every class from another client until stopped; counts failures.
  void StartTraffic() {
    stop_traffic_ = false;
    traffic_ = std::thread([this] {
      http::Client c("127.0.0.1", gw_->port(), 10s);
      const char* tiers[] = {"flex", "priority", "", "batch", "realtime"};
      for (int i = 0; !stop_traffic_; ++i) {
        ++traffic_sent_;
        if (Chat(c, tiers[i % 5], i % 2 == 0).rfind("error", 0) == 0) ++traffic_failed_;
      }
    });
  }
  void StopTraffic() {
    stop_traffic_ = true;
    traffic_.join();
  }
  json Admin(const std::string& method, const std::string& path, const std::string& body = "", int* status = nullptr) {
    auto r = client_->Send(method, path, body, admin_);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return json();
    if (status != nullptr) *status = r->status;
    return json::parse(r->body, nullptr, false);
  }
  // GET /admin/schedules' entry for replica `id` of m@v1.
  json ReplicaEntry(const std::string& id) {
    const json all = Admin("GET", "/admin/schedules");
    for (const auto& r : all["schedules"][0]["replicas"]) {
      if (r["id"] == id) return r;
    }
    return json();
  }

  std::promise<void> release_;
  std::shared_future<void> gate_;
  bool released_ = false;
  std::vector<std::unique_ptr<Upstream>> upstreams_;
  std::atomic<system_clock::time_point> now_{Utc(6, 10, 59)};  // Monday 19:59 +09:00
  std::string path_;
  std::unique_ptr<Gateway> gw_;
  std::unique_ptr<http::Client> client_;
  http::Headers admin_;
  std::vector<std::thread> streams_;
  std::thread traffic_;
  std::atomic<bool> stop_traffic_{false};
  std::atomic<int> traffic_sent_{0}, traffic_failed_{0};
};

TEST_F(ScheduleAdminTest, PoolsSwitchAtNightAndBackWithoutFailingRequestsInFlight) {
  StartGateway(kSchedule);
  // Day: realtime on r1 and r2, batch on r3.
  EXPECT_EQ(ReplicaEntry("r2")["pool"], "realtime");
  EXPECT_EQ(ReplicaEntry("r2")["next_pool"], "batch");
  EXPECT_EQ(ReplicaEntry("r2")["next_change"], "2024-05-06T20:00:00+09:00");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Chat("flex"), "r3");
    EXPECT_EQ(Chat("batch", /*header=*/true), "r3");
    const std::string rt = Chat("priority");
    EXPECT_TRUE(rt == "r1" || rt == "r2") << rt;
    const std::string inter = Chat("");
    EXPECT_TRUE(inter == "r1" || inter == "r2") << inter;
  }
  // Streams held in flight across the switch: least_loaded puts the two
  // realtime ones on r1 and r2, the batch one on r3.
  std::vector<std::shared_ptr<StreamResult>> held;
  std::set<std::string> realtime_on;
  for (const char* tier : {"priority", "priority", "flex"}) {
    const auto before = StreamCounts();
    held.push_back(StartStream(tier));
    if (std::string(tier) == "priority") realtime_on.insert(HeldOn(before));
    if (std::string(tier) == "flex") {
      EXPECT_EQ(HeldOn(before), "r3");
    }
  }
  EXPECT_EQ(realtime_on, (std::set<std::string>{"r1", "r2"}));

  // 20:00 there: r2 moves to the batch pool, with requests in flight.
  StartTraffic();
  std::this_thread::sleep_for(50ms);
  SetClock(Utc(6, 11, 0));
  std::this_thread::sleep_for(50ms);
  StopTraffic();
  std::set<std::string> batch_on;
  for (int i = 0; i < 6; ++i) {
    const std::string b = Chat(i % 2 ? "flex" : "batch", i % 3 == 0);
    EXPECT_TRUE(b == "r2" || b == "r3") << b;
    batch_on.insert(b);
    EXPECT_EQ(Chat("realtime"), "r1");
    EXPECT_EQ(Chat("scale", true), "r1");
    EXPECT_EQ(Chat(""), "r1");  // interactive goes with realtime
  }
  const json r2 = ReplicaEntry("r2");
  EXPECT_EQ(r2["pool"], "batch");
  EXPECT_EQ(r2["next_pool"], "realtime");
  EXPECT_EQ(r2["next_change"], "2024-05-07T08:00:00+09:00");
  EXPECT_EQ(ReplicaEntry("r1")["pool"], "realtime");
  EXPECT_TRUE(ReplicaEntry("r1")["next_change"].is_null());  // realtime day and night
  const std::string metrics = client_->Send("GET", "/metrics")->body;
  EXPECT_NE(metrics.find("pagoda_gateway_replica_pool{model=\"m\",deployment=\"m@v1\",replica=\"r2\",pool=\"batch\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("pagoda_gateway_replica_pool{model=\"m\",deployment=\"m@v1\",replica=\"r2\",pool=\"realtime\"} 0"),
            std::string::npos);

  // Two batch streams at night: one on each batch replica (r2 and r3 hold one stream each already).
  for (int i = 0; i < 2; ++i) {
    const auto before = StreamCounts();
    held.push_back(StartStream("flex"));
    batch_on.insert(HeldOn(before));
  }
  EXPECT_EQ(batch_on, (std::set<std::string>{"r2", "r3"}));

  // 08:00 there the next morning: r2 is back in the realtime pool.
  StartTraffic();
  std::this_thread::sleep_for(50ms);
  SetClock(Utc(6, 23, 0));
  std::this_thread::sleep_for(50ms);
  StopTraffic();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Chat("flex"), "r3");
    const std::string rt = Chat("priority", true);
    EXPECT_TRUE(rt == "r1" || rt == "r2") << rt;
  }
  EXPECT_EQ(ReplicaEntry("r2")["pool"], "realtime");

  // Every stream, begun before a switch, ends whole where it began.
  release_.set_value();
  released_ = true;
  for (auto& t : streams_) t.join();
  streams_.clear();
  ASSERT_EQ(held.size(), 5u);
  for (const auto& s : held) {
    EXPECT_EQ(s->status, 200);
    ASSERT_EQ(s->events.size(), 4u);
    EXPECT_EQ(s->events.back(), "[DONE]");
    EXPECT_EQ(json::parse(s->events[0])["tag"], s->replica);
  }
  EXPECT_GT(traffic_sent_.load(), 0);
  EXPECT_EQ(traffic_failed_.load(), 0);
  // No class was left without its pool.
  EXPECT_EQ(client_->Send("GET", "/metrics")->body.find("pagoda_gateway_pool_fallbacks_total{"), std::string::npos);
}

TEST_F(ScheduleAdminTest, AdminSetsAndRemovesSchedulesUntilTheNextReload) {
  StartGateway(kSchedule);
  int status = 0;
  // Errors.
  EXPECT_EQ(client_->Send("GET", "/admin/schedules")->status, 401);
  json e = Admin("PUT", "/admin/schedules/m/v1", "{not json", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(e["error"]["code"], "invalid_json");
  e = Admin("PUT", "/admin/schedules/m/v1",
            R"({"time_zone":"UTC","windows":[{"start":"8:00","end":"20:00","pool":"batch"}]})", &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("windows[0].start: '8:00' is not HH:MM"), std::string::npos)
      << e.dump();
  e = Admin("PUT", "/admin/schedules/m/v1",
            R"({"time_zone":"Europe/Berlin","windows":[{"start":"08:00","end":"20:00","pool":"batch"}]})", &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("IANA"), std::string::npos) << e.dump();
  e = Admin("PUT", "/admin/schedules/m/v1",
            R"({"time_zone":"UTC","windows":[{"start":"08:00","end":"20:00","pool":"batch"},
                                             {"start":"19:00","end":"21:00","pool":"realtime","replicas":["r2"]}]})",
            &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("overlap"), std::string::npos) << e.dump();
  const std::string all_batch = R"({"time_zone":"UTC","windows":[{"start":"00:00","end":"24:00","pool":"batch"}]})";
  Admin("PUT", "/admin/schedules/m/v9", all_batch, &status);
  EXPECT_EQ(status, 404);
  Admin("PUT", "/admin/schedules/nope/v1", all_batch, &status);
  EXPECT_EQ(status, 404);
  Admin("GET", "/admin/schedules/m", "", &status);
  EXPECT_EQ(status, 404);
  Admin("POST", "/admin/schedules/m/v1", all_batch, &status);
  EXPECT_EQ(status, 405);
  EXPECT_EQ(Chat("priority").rfind("r", 0), 0u);  // nothing changed
  EXPECT_EQ(Chat("flex"), "r3");

  // Every replica in the batch pool: batch spreads, realtime falls back (never fails) and is counted.
  e = Admin("PUT", "/admin/schedules/m/v1", all_batch, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(e["source"], "admin");
  EXPECT_EQ(e["replicas"][1]["pool"], "batch");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Chat("flex").rfind("r", 0), 0u);
  EXPECT_EQ(Chat("priority").rfind("r", 0), 0u);
  EXPECT_EQ(Chat("").rfind("r", 0), 0u);
  const std::string metrics = client_->Send("GET", "/metrics")->body;
  EXPECT_NE(metrics.find("pagoda_gateway_pool_fallbacks_total{model=\"m\",class=\"realtime\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("pagoda_gateway_pool_fallbacks_total{model=\"m\",class=\"interactive\"} 1"),
            std::string::npos);
  EXPECT_EQ(metrics.find("class=\"batch\""), std::string::npos);

  // DELETE: every replica shared; a second DELETE finds nothing.
  e = Admin("DELETE", "/admin/schedules/m/v1", "", &status);
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(e["schedule"].is_null());
  EXPECT_EQ(e["replicas"][2]["pool"], "shared");
  Admin("DELETE", "/admin/schedules/m/v1", "", &status);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(Admin("GET", "/admin/schedules/m/v1")["replicas"][0]["pool"], "shared");

  // A reload brings back the file's schedule (admin changes are not written to it).
  Admin("POST", "/admin/reload", "", &status);
  EXPECT_EQ(status, 200);
  const json entry = Admin("GET", "/admin/schedules/m/v1");
  EXPECT_EQ(entry["source"], "config");
  EXPECT_EQ(entry["schedule"]["time_zone"], "+09:00");
  EXPECT_EQ(entry["replicas"][2]["pool"], "batch");
  EXPECT_EQ(Chat("flex"), "r3");
}

}  // namespace
}  // namespace pagoda::gateway
