// RolloutController with a fake clock, a fake prober and fake attempt
// counts. Where traffic goes is checked through the Router (what requests
// would actually do), not through the controller's own report.
#include "gateway/rollout_controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "gateway/router.h"

namespace pagoda::gateway {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string Config(bool with_v2 = true, const std::string& current = "v1") {
  std::string s = "[[models]]\nname = \"m\"\npolicy = \"round_robin\"\ncurrent_version = \"" + current + "\"\n";
  auto dep = [&](const std::string& v, int port0, int n) {
    s += "[[models.deployments]]\nversion = \"" + v + "\"\n";
    for (int i = 0; i < n; ++i) {
      s += "[[models.deployments.replicas]]\nurl = \"http://127.0.0.1:" + std::to_string(port0 + i) +
           "\"\nname = \"" + v + "-" + std::to_string(i) + "\"\n";
    }
  };
  dep("v1", 1001, 2);
  if (with_v2) dep("v2", 2001, 2);
  dep("v3", 3001, 1);
  return s;
}

std::shared_ptr<RoutingTable> Table(const std::string& toml, const RoutingTable* previous = nullptr) {
  auto c = ParseGatewayConfig(toml);
  EXPECT_TRUE(c.ok()) << c.status().message();
  auto t = RoutingTable::Build(*c, previous, [](const std::string&) { return std::nullopt; });
  EXPECT_TRUE(t.ok()) << t.status().message();
  return *t;
}

class RolloutControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table_ = Table(Config());
    ctl_ = std::make_unique<RolloutController>(
        table_,
        [this](std::shared_ptr<const Replica> r, std::function<void(bool)> done) {
          bool ok;
          {
            std::lock_guard<std::mutex> lock(mu_);
            ++probes_[r->id()];
            if (unanswered_.count(r->id()) != 0) return;
            ok = failing_.count(r->id()) == 0;
          }
          done(ok);
        },
        [this](const std::string& dep) {
          std::lock_guard<std::mutex> lock(mu_);
          return counts_[dep];
        });
  }

  RolloutSpec Spec(const std::string& version = "v2") {
    RolloutSpec s;
    s.model = "m";
    s.version = version;
    s.steps = {10, 50, 100};
    s.step_interval = 1000ms;
    s.probe_interval = 100ms;
    s.health_passes = 2;
    s.max_probe_failures = 2;
    s.health_timeout = 5000ms;
    return s;
  }
  // Advances the fake clock in probe-interval ticks.
  void Run(std::chrono::milliseconds d) {
    for (auto end = now_ + d; now_ < end;) {
      now_ += 100ms;
      ctl_->Tick(now_);
    }
  }
  RolloutStatus Status() {
    auto s = ctl_->Get("m", now_);
    EXPECT_TRUE(s.has_value());
    return s ? *s : RolloutStatus{};
  }
  // How `n` requests for `model` would be routed now: deployment -> count.
  std::map<std::string, int> Shares(const std::string& model, int n = 1000) {
    std::map<std::string, int> out;
    for (int i = 0; i < n; ++i) {
      RouteRequest req;
      req.model = model;
      auto d = Route(*ctl_table(), req, Clock::now());
      ++out[d.ok() ? d->deployment : "error " + std::to_string(d.error().status)];
    }
    return out;
  }
  std::shared_ptr<RoutingTable> ctl_table() { return table_; }
  // Starts a rollout to v2 and lets it pass health into step 1.
  void StartIntoStep1() {
    ASSERT_TRUE(ctl_->Start(Spec(), now_).ok());
    Run(200ms);
    ASSERT_EQ(Status().state, RolloutState::kProgressing);
    ASSERT_EQ(Status().step, 1u);
  }
  void Fail(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    failing_.insert(id);
  }
  void AddCounts(const std::string& dep, uint64_t requests, uint64_t failures) {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[dep].requests += requests;
    counts_[dep].failures += failures;
  }

  std::shared_ptr<RoutingTable> table_;
  std::unique_ptr<RolloutController> ctl_;
  Clock::time_point now_ = Clock::now();
  std::mutex mu_;
  std::map<std::string, int> probes_;
  std::set<std::string> failing_, unanswered_;
  std::map<std::string, DeploymentCounts> counts_;
};

TEST_F(RolloutControllerTest, StepsTheWeightsThenMakesTheNewVersionCurrent) {
  ASSERT_TRUE(ctl_->Start(Spec(), now_).ok());
  EXPECT_EQ(Status().state, RolloutState::kCheckingHealth);
  EXPECT_EQ(Shares("m")["m@v1"], 1000);  // nothing moves before health passes
  Run(100ms);                             // one passing probe of each; two are needed
  EXPECT_EQ(Status().state, RolloutState::kCheckingHealth);
  Run(100ms);
  EXPECT_EQ(Status().state, RolloutState::kProgressing);
  EXPECT_EQ(Status().step, 1u);
  EXPECT_EQ(Status().weights.at("v1"), 90);
  EXPECT_EQ(Status().weights.at("v2"), 10);
  auto shares = Shares("m", 4000);
  EXPECT_GT(shares["m@v2"], 4000 * 0.06);
  EXPECT_LT(shares["m@v2"], 4000 * 0.14);
  EXPECT_EQ(shares["m@v1"] + shares["m@v2"], 4000);
  Run(900ms);
  EXPECT_EQ(Status().step, 1u);  // the window is not over yet
  Run(100ms);
  EXPECT_EQ(Status().step, 2u);
  shares = Shares("m", 4000);
  EXPECT_GT(shares["m@v2"], 4000 * 0.42);
  EXPECT_LT(shares["m@v2"], 4000 * 0.58);
  Run(1000ms);
  EXPECT_EQ(Status().step, 3u);
  EXPECT_EQ(Shares("m")["m@v2"], 1000);
  EXPECT_EQ(table_->CurrentVersion("m"), "v1");  // not promoted before the last window passes
  Run(1000ms);
  const RolloutStatus s = Status();
  EXPECT_EQ(s.state, RolloutState::kSucceeded);
  EXPECT_EQ(s.current_version, "v2");
  EXPECT_EQ(table_->CurrentVersion("m"), "v2");
  EXPECT_EQ(Shares("m")["m@v2"], 1000);
  EXPECT_EQ(Shares("m@v1")["m@v1"], 1000);  // the old version stays addressable
  EXPECT_EQ(s.ToJson()["state"], "succeeded");
  EXPECT_NE(ctl_->RenderMetrics().find("pagoda_gateway_rollout_state{model=\"m\"} 3"), std::string::npos);
}

TEST_F(RolloutControllerTest, NewVersionFailingHealthRollsBackBeforeAnyTrafficMoves) {
  Fail("v2-1");
  ASSERT_TRUE(ctl_->Start(Spec(), now_).ok());
  Run(100ms);
  EXPECT_EQ(Status().state, RolloutState::kCheckingHealth);
  EXPECT_EQ(Shares("m")["m@v1"], 1000);
  Run(100ms);
  const RolloutStatus s = Status();
  EXPECT_EQ(s.state, RolloutState::kRolledBack);
  EXPECT_NE(s.reason.find("v2-1"), std::string::npos) << s.reason;
  EXPECT_EQ(s.step, 0u);
  EXPECT_EQ(Shares("m")["m@v1"], 1000);
  EXPECT_EQ(table_->CurrentVersion("m"), "v1");
  EXPECT_NE(ctl_->RenderMetrics().find("pagoda_gateway_rollbacks_total{model=\"m\"} 1"), std::string::npos);
  // Probes stop once it ended.
  const int before = probes_["v2-0"];
  Run(1000ms);
  EXPECT_EQ(probes_["v2-0"], before);
}

TEST_F(RolloutControllerTest, UnansweredProbesTimeOutIntoARollback) {
  unanswered_.insert("v2-0");
  RolloutSpec spec = Spec();
  spec.health_timeout = 1000ms;
  ASSERT_TRUE(ctl_->Start(spec, now_).ok());
  Run(900ms);
  EXPECT_EQ(Status().state, RolloutState::kCheckingHealth);
  Run(200ms);
  EXPECT_EQ(Status().state, RolloutState::kRolledBack);
  EXPECT_NE(Status().reason.find("did not pass health"), std::string::npos) << Status().reason;
}

TEST_F(RolloutControllerTest, ReplicaFailingProbesMidRolloutRollsBackToAllOld) {
  StartIntoStep1();
  Run(1000ms);
  ASSERT_EQ(Status().step, 2u);
  Fail("v2-0");
  Run(100ms);  // one failure: below max_probe_failures
  EXPECT_EQ(Status().state, RolloutState::kProgressing);
  Run(100ms);
  const RolloutStatus s = Status();
  EXPECT_EQ(s.state, RolloutState::kRolledBack);
  EXPECT_NE(s.reason.find("v2-0"), std::string::npos) << s.reason;
  EXPECT_EQ(s.step, 2u);
  EXPECT_EQ(Shares("m")["m@v1"], 1000);
  EXPECT_EQ(table_->CurrentVersion("m"), "v1");
  ASSERT_EQ(s.checks.size(), 2u);
  EXPECT_EQ(s.checks[0].name, "health");
  EXPECT_FALSE(s.checks[0].ok);
}

TEST_F(RolloutControllerTest, ReplicaEjectedByTheGatewayRollsBack) {
  StartIntoStep1();
  for (const auto& r : table_->AllReplicas()) {
    if (r->id() == "v2-1") r->state().OnProbe(false, Clock::now());
  }
  Run(100ms);
  EXPECT_EQ(Status().state, RolloutState::kRolledBack);
  EXPECT_NE(Status().reason.find("ejected"), std::string::npos) << Status().reason;
}

TEST_F(RolloutControllerTest, ErrorRateAboveTheThresholdRollsBack) {
  AddCounts("m@v2", 1000, 900);  // before the step: not this window's
  StartIntoStep1();
  AddCounts("m@v2", 40, 1);  // 2.5% <= 5%
  Run(100ms);
  RolloutStatus s = Status();
  EXPECT_EQ(s.state, RolloutState::kProgressing);
  ASSERT_EQ(s.checks.size(), 2u);
  EXPECT_EQ(s.checks[1].name, "error_rate");
  EXPECT_DOUBLE_EQ(s.checks[1].value, 1.0 / 40);
  Run(900ms);  // the next step starts a new window
  ASSERT_EQ(Status().step, 2u);
  AddCounts("m@v2", 20, 2);  // 10% > 5%
  Run(100ms);
  s = Status();
  EXPECT_EQ(s.state, RolloutState::kRolledBack);
  EXPECT_NE(s.reason.find("error rate"), std::string::npos) << s.reason;
  EXPECT_EQ(Shares("m")["m@v1"], 1000);
}

TEST_F(RolloutControllerTest, AbortRestoresAllTrafficToTheOldVersion) {
  StartIntoStep1();
  Run(1000ms);
  ASSERT_EQ(Status().step, 2u);
  auto a = ctl_->Abort("m", "operator", now_);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->state, RolloutState::kAborted);
  EXPECT_EQ(a->reason, "operator");
  EXPECT_EQ(Shares("m")["m@v1"], 1000);
  for (const auto& [v, w] : table_->TrafficWeights("m")) EXPECT_EQ(w, 0) << v;
  EXPECT_EQ(table_->CurrentVersion("m"), "v1");
  Run(3000ms);  // an ended rollout does not move again
  EXPECT_EQ(Status().state, RolloutState::kAborted);
  EXPECT_EQ(Shares("m")["m@v1"], 1000);
  EXPECT_EQ(ctl_->Abort("m", "again", now_).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ctl_->Abort("nope", "x", now_).status().code(), StatusCode::kNotFound);
  // Aborts are not automatic rollbacks.
  EXPECT_EQ(ctl_->RenderMetrics().find("pagoda_gateway_rollbacks_total{model=\"m\"}"), std::string::npos);
}

TEST_F(RolloutControllerTest, OneRolloutPerModelAndStartIsValidated) {
  ASSERT_TRUE(ctl_->Start(Spec(), now_).ok());
  EXPECT_EQ(ctl_->Start(Spec("v3"), now_).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ctl_->Start(Spec("v9"), now_).status().code(), StatusCode::kNotFound);
  RolloutSpec other = Spec();
  other.model = "nope";
  EXPECT_EQ(ctl_->Start(other, now_).status().code(), StatusCode::kNotFound);
  RolloutSpec bad = Spec();
  bad.steps = {50, 20, 100};
  EXPECT_EQ(ctl_->Start(bad, now_).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(ctl_->Abort("m", "x", now_).ok());
  EXPECT_EQ(ctl_->Start(Spec("v1"), now_).status().code(), StatusCode::kFailedPrecondition);  // already current
  EXPECT_TRUE(ctl_->Start(Spec("v3"), now_).ok());  // the previous one ended
}

TEST_F(RolloutControllerTest, PinnedRequestsIgnoreTheRolloutsWeights) {
  StartIntoStep1();
  Run(1000ms);
  ASSERT_EQ(Status().step, 2u);  // 50%
  EXPECT_EQ(Shares("m@v1")["m@v1"], 1000);
  EXPECT_EQ(Shares("m@v2")["m@v2"], 1000);
  Run(1000ms);  // 100% v2
  EXPECT_EQ(Shares("m@v1")["m@v1"], 1000);
  Run(1000ms);  // promoted
  ASSERT_EQ(Status().state, RolloutState::kSucceeded);
  EXPECT_EQ(Shares("m@v1")["m@v1"], 1000);
}

TEST_F(RolloutControllerTest, ReloadKeepingBothVersionsKeepsTheRollout) {
  StartIntoStep1();
  Run(1000ms);
  ASSERT_EQ(Status().step, 2u);
  auto reloaded = Table(Config(), table_.get());  // its config says all weights 0
  ctl_->Adopt(reloaded, now_);
  table_ = reloaded;
  EXPECT_EQ(Status().state, RolloutState::kProgressing);
  EXPECT_EQ(table_->TrafficWeights("m").at("v2"), 50);
  const auto shares = Shares("m", 2000);
  EXPECT_GT(shares.at("m@v2"), 2000 * 0.4);
  Run(1000ms);  // it keeps stepping, on the new table
  EXPECT_EQ(Status().step, 3u);
  EXPECT_EQ(Shares("m")["m@v2"], 1000);
}

TEST_F(RolloutControllerTest, ReloadRemovingEitherVersionAbortsTheRollout) {
  StartIntoStep1();
  auto reloaded = Table(Config(/*with_v2=*/false), table_.get());
  ctl_->Adopt(reloaded, now_);
  table_ = reloaded;
  const RolloutStatus s = Status();
  EXPECT_EQ(s.state, RolloutState::kAborted);
  EXPECT_NE(s.reason.find("removed m@v2"), std::string::npos) << s.reason;
  EXPECT_EQ(Shares("m")["m@v1"], 1000);  // the new config's traffic
  Run(1000ms);
  EXPECT_EQ(Status().state, RolloutState::kAborted);
}

TEST_F(RolloutControllerTest, PromotionHoldsAcrossReloadsUntilTheConfigChangesCurrent) {
  StartIntoStep1();
  Run(3000ms);
  ASSERT_EQ(Status().state, RolloutState::kSucceeded);
  auto same = Table(Config(), table_.get());
  ctl_->Adopt(same, now_);
  table_ = same;
  EXPECT_EQ(table_->CurrentVersion("m"), "v2");
  EXPECT_EQ(Shares("m")["m@v2"], 1000);
  auto edited = Table(Config(true, "v3"), table_.get());  // the operator names another current version
  ctl_->Adopt(edited, now_);
  table_ = edited;
  EXPECT_EQ(table_->CurrentVersion("m"), "v3");
  auto again = Table(Config(true, "v3"), table_.get());
  ctl_->Adopt(again, now_);
  EXPECT_EQ(again->CurrentVersion("m"), "v3");
}

TEST_F(RolloutControllerTest, PromotionSurvivesALaterRolloutThatRollsBack) {
  StartIntoStep1();
  Run(3000ms);
  ASSERT_EQ(Status().state, RolloutState::kSucceeded);
  Fail("v3-0");
  ASSERT_TRUE(ctl_->Start(Spec("v3"), now_).ok());
  EXPECT_EQ(Status().from_version, "v2");
  Run(300ms);
  ASSERT_EQ(Status().state, RolloutState::kRolledBack);
  auto reloaded = Table(Config(), table_.get());
  ctl_->Adopt(reloaded, now_);
  table_ = reloaded;
  EXPECT_EQ(table_->CurrentVersion("m"), "v2");
  EXPECT_EQ(Shares("m")["m@v2"], 1000);
}

TEST_F(RolloutControllerTest, ConcurrentStatusCallsWhileItRuns) {
  ctl_->StartTicking(1ms);  // real clock: steps of 1 ms
  RolloutSpec spec = Spec();
  spec.step_interval = 2ms;
  spec.probe_interval = 1ms;
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop) {
        for (const RolloutStatus& s : ctl_->All(Clock::now())) {
          EXPECT_LE(s.step, s.spec.steps.size());
          if (s.state == RolloutState::kProgressing) {
            EXPECT_GE(s.step, 1u);
            EXPECT_EQ(s.percent, s.spec.steps[s.step - 1]);
          }
          (void)s.ToJson().dump();
        }
        (void)ctl_->RenderMetrics();
        ++reads;
      }
    });
  }
  int started = 0;
  for (int i = 0; i < 200; ++i) {
    if (ctl_->Start(spec, Clock::now()).ok()) ++started;
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    (void)ctl_->Abort("m", "test", Clock::now());
  }
  stop = true;
  for (auto& t : readers) t.join();
  ctl_->StopTicking();
  EXPECT_GT(started, 0);
  EXPECT_GT(reads.load(), 0);
  const RolloutStatus s = Status();
  EXPECT_FALSE(IsActive(s.state));
  // Whatever it ended as, traffic is all on one version.
  const auto shares = Shares("m");
  EXPECT_EQ(shares.size(), 1u);
}

}  // namespace
}  // namespace pagoda::gateway
