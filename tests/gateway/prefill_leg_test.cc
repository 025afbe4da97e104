// The prefill leg: its body and the reading of its answer, then the whole
// two-leg flow through an in-process gateway in front of loopback HTTP
// servers that stand in for prefill and decode replicas and record every
// body they receive (the shape of gateway_test.cc's upstreams). What a real
// `pagoda serve --role ...` does with the KV is the serving side's; here the
// stand-in prefill replica answers as the protocol says, echoing the
// transfer id.
#include "gateway/prefill_leg.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "gateway/gateway_fixture.h"
#include "http/server.h"

namespace pagoda::gateway {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

TEST(PrefillLegTest, BodyAsksForOneTokenWithoutStreamingAndNamesTheTransfer) {
  const std::string client = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,)"
                             R"("stream_options":{"include_usage":true},"max_completion_tokens":500,"n":3,)"
                             R"("logprobs":true,"top_logprobs":5,"temperature":0.5,"user":"u1"})";
  auto body = PrefillBody(client, "llama-3", {"10.0.0.2:7100", "abc123"});
  ASSERT_TRUE(body.ok()) << body.status().message();
  const json j = json::parse(*body);
  EXPECT_EQ(j["stream"], false);
  EXPECT_EQ(j["max_tokens"], 1);
  EXPECT_EQ(j["n"], 1);
  EXPECT_EQ(j["model"], "llama-3");
  for (const char* gone : {"max_completion_tokens", "stream_options", "logprobs", "top_logprobs"}) {
    EXPECT_FALSE(j.contains(gone)) << gone;
  }
  // Everything else (the prompt, sampling, the user) as the client sent it.
  EXPECT_EQ(j["messages"], json::parse(client)["messages"]);
  EXPECT_EQ(j["temperature"], 0.5);
  EXPECT_EQ(j["user"], "u1");
  EXPECT_EQ(j["kv_transfer_params"],
            json({{"do_remote_decode", true}, {"remote_addr", "10.0.0.2:7100"}, {"transfer_id", "abc123"}}));
  EXPECT_EQ(json::parse(*PrefillBody(R"({"model":"m","prompt":"x"})", "", {"h:1", "t"}))["model"], "m");
  EXPECT_FALSE(PrefillBody("[1,2]", "", {"h:1", "t"}).ok());
  EXPECT_FALSE(PrefillBody("{oops", "", {"h:1", "t"}).ok());
}

TEST(PrefillLegTest, ReadsTheTransferFromTheAnswer) {
  auto ok = ParseKvTransferResult(
      R"({"id":"c1","choices":[],"kv_transfer_params":{"transfer_id":"t1","status":"ok","blocks":12,"bytes":4096}})",
      "t1");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->ok());
  EXPECT_EQ(ok->blocks, 12);
  EXPECT_EQ(ok->bytes, 4096);
  auto failed = ParseKvTransferResult(
      R"({"kv_transfer_params":{"transfer_id":"t1","status":"failed","blocks":0,"bytes":0,"error":"refused"}})", "t1");
  ASSERT_TRUE(failed.ok());
  EXPECT_FALSE(failed->ok());
  EXPECT_EQ(failed->error, "refused");
  EXPECT_FALSE(ParseKvTransferResult(R"({"choices":[]})", "t1").ok());  // a replica that ignored the request
  EXPECT_FALSE(ParseKvTransferResult(R"({"kv_transfer_params":{"transfer_id":"t2","status":"ok"}})", "t1").ok());
  EXPECT_FALSE(ParseKvTransferResult(R"({"kv_transfer_params":{"transfer_id":"t1","status":"maybe"}})", "t1").ok());
  EXPECT_FALSE(ParseKvTransferResult("not json", "t1").ok());
}

// A replica stand-in: records every completion body it gets (with the
// order across all stand-ins); answers a prefill leg (a body with
// kv_transfer_params) as `prefill` says, anything else as a normal replica
// (a 2-event stream, or a JSON answer).
class Replica {
 public:
  enum class Prefill { kOk, kError500, kTransferFailed, kHang };

  Replica(std::string tag, std::atomic<int>* order, Prefill prefill = Prefill::kOk, int status = 200)
      : tag_(std::move(tag)), order_(order), prefill_(prefill), status_(status) {
    http::Router r;
    r.Add("GET", "/health", http::SyncHandler([](const http::Request&) { return http::Response::Json(200, "{}"); }));
    for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
      r.Add("POST", path, http::Handler([this](const http::Request& req, std::shared_ptr<http::ResponseWriter> w) {
              Handle(req, std::move(w));
            }));
    }
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, std::move(r));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~Replica() { server_->Shutdown(1s); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  struct Received {
    std::string body;
    std::string trace;  // the x-trace header
    int order = 0;
  };
  std::vector<Received> received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  std::atomic<bool> cancelled{false};

 private:
  void Handle(const http::Request& req, std::shared_ptr<http::ResponseWriter> w) {
    const json body = json::parse(req.body);
    {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string* trace = req.headers.Find("x-trace");
      received_.push_back({req.body, trace != nullptr ? *trace : "", ++*order_});
    }
    if (body.contains("kv_transfer_params")) {
      const std::string id = body["kv_transfer_params"].value("transfer_id", "");
      switch (prefill_) {
        case Prefill::kOk:
        case Prefill::kTransferFailed: {
          const bool ok = prefill_ == Prefill::kOk;
          json kv = {{"transfer_id", id}, {"status", ok ? "ok" : "failed"}, {"blocks", ok ? 3 : 0},
                     {"bytes", ok ? 3072 : 0}};
          if (!ok) kv["error"] = "decode side refused";
          w->Respond(http::Response::Json(200, json{{"tag", tag_}, {"kv_transfer_params", kv}}.dump()));
          return;
        }
        case Prefill::kError500:
          w->Respond(http::Response::Json(500, R"({"error":{"message":"boom"}})"));
          return;
        case Prefill::kHang: {
          w->OnCancel([this] { cancelled = true; });
          std::lock_guard<std::mutex> lock(mu_);
          held_.push_back(std::move(w));  // never answered
          return;
        }
      }
    }
    if (status_ != 200) {
      w->Respond(http::Response::Json(status_, R"({"error":{"message":"boom"}})"));
      return;
    }
    if (!body.value("stream", false)) {
      w->Respond(http::Response::Json(200, json{{"tag", tag_}}.dump()));
      return;
    }
    std::thread([w, tag = tag_] {
      w->SendSse(json{{"tag", tag}, {"i", 0}}.dump());
      w->SendSse("[DONE]");
      w->EndSse();
    }).detach();
  }

  std::string tag_;
  std::atomic<int>* order_;
  Prefill prefill_;
  int status_;
  std::mutex mu_;
  std::vector<Received> received_;                        // guarded by mu_
  std::vector<std::shared_ptr<http::ResponseWriter>> held_;  // guarded by mu_
  std::unique_ptr<http::Server> server_;
};

struct ReplicaEntry {
  const Replica* replica;
  std::string name;
  std::string role;         // "" = the default (both)
  std::string kv_transfer;  // "" = none
};

// Model "m" (least_loaded: ties go to the first replica) over `replicas`.
std::string PdModel(const std::vector<ReplicaEntry>& replicas, int64_t threshold, int64_t timeout_ms = 2000,
                    const std::string& served_model = "m") {
  std::string s = "[[models]]\nname = \"m\"\nserved_model_name = \"" + served_model +
                  "\"\npolicy = \"least_loaded\"\npd_threshold_tokens = " + std::to_string(threshold) +
                  "\npd_prefill_timeout_ms = " + std::to_string(timeout_ms) +
                  "\n[[models.deployments]]\nversion = \"v1\"\n";
  for (const ReplicaEntry& e : replicas) {
    s += "[[models.deployments.replicas]]\nurl = \"" + e.replica->url() + "\"\nname = \"" + e.name + "\"\n";
    if (!e.role.empty()) s += "role = \"" + e.role + "\"\n";
    if (!e.kv_transfer.empty()) s += "kv_transfer = \"" + e.kv_transfer + "\"\n";
  }
  return s;
}

class PrefillLegFlowTest : public GatewayFixture {
 protected:
  // A chat request with a ~1 KB prompt (about 300 tokens by the bytes / 4 estimate).
  std::string LongChat(bool stream) const {
    return json{{"model", "m"},
                {"stream", stream},
                {"max_tokens", 64},
                {"messages", {{{"role", "user"}, {"content", std::string(1200, 'x')}}}}}
        .dump();
  }
  http::ClientResponse Post(const std::string& body, std::vector<std::string>* events = nullptr) {
    http::Headers h;
    h.Add("x-trace", "t-42");
    auto r = events == nullptr ? client_->Send("POST", "/v1/chat/completions", body, h)
                               : client_->SendSse("POST", "/v1/chat/completions", body,
                                                  [&](std::string_view d) {
                                                    events->emplace_back(d);
                                                    return true;
                                                  },
                                                  h);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : http::ClientResponse{};
  }
  std::string Metrics() { return client_->Send("GET", "/metrics")->body; }
  static std::string Header(const http::ClientResponse& r, const char* name) {
    const std::string* v = r.headers.Find(name);
    return v != nullptr ? *v : "<none>";
  }

  std::atomic<int> order_{0};
};

TEST_F(PrefillLegFlowTest, PrefillReplicaGetsTheCutDownBodyThenTheDecodeReplicaTheOriginal) {
  Replica prefill("prefill", &order_);
  Replica decode("decode", &order_);
  StartGateway(PdModel({{&prefill, "p1", "prefill", ""}, {&decode, "d1", "decode", "127.0.0.1:7100"}}, 64));
  const std::string body = LongChat(/*stream=*/true);
  std::vector<std::string> events;
  auto r = Post(body, &events);
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(json::parse(events[0])["tag"], "decode");
  EXPECT_EQ(Header(r, "x-pagoda-replica"), "d1");
  EXPECT_EQ(Header(r, "x-pagoda-prefill-replica"), "p1");

  const auto p = prefill.received();
  const auto d = decode.received();
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_LT(p[0].order, d[0].order);  // the prefill leg first
  const json pj = json::parse(p[0].body);
  EXPECT_EQ(pj["stream"], false);
  EXPECT_EQ(pj["max_tokens"], 1);
  EXPECT_EQ(pj["n"], 1);
  EXPECT_EQ(pj["model"], "m");
  EXPECT_EQ(pj["messages"], json::parse(body)["messages"]);
  EXPECT_EQ(pj["kv_transfer_params"]["remote_addr"], "127.0.0.1:7100");
  EXPECT_EQ(pj["kv_transfer_params"]["do_remote_decode"], true);
  EXPECT_TRUE(std::regex_match(pj["kv_transfer_params"]["transfer_id"].get<std::string>(), std::regex("[0-9a-f]{32}")));
  EXPECT_EQ(d[0].body, body);  // the client's request, byte for byte
  // Both legs forward the client's headers.
  EXPECT_EQ(p[0].trace, "t-42");
  EXPECT_EQ(d[0].trace, "t-42");

  const std::string m = Metrics();
  EXPECT_NE(m.find("pagoda_gateway_pd_requests_total{model=\"m\",outcome=\"disaggregated\"} 1\n"), std::string::npos)
      << m;
  EXPECT_NE(m.find("pagoda_gateway_pd_prefill_seconds_count 1\n"), std::string::npos) << m;
}

TEST_F(PrefillLegFlowTest, BelowTheThresholdOnlyTheDecodeReplicaIsCalled) {
  Replica prefill("prefill", &order_);
  Replica decode("decode", &order_);
  StartGateway(PdModel({{&prefill, "p1", "prefill", ""}, {&decode, "d1", "decode", "127.0.0.1:7100"}}, 100000));
  for (bool stream : {false, true}) {
    std::vector<std::string> events;
    auto r = Post(LongChat(stream), stream ? &events : nullptr);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(Header(r, "x-pagoda-replica"), "d1");
    EXPECT_EQ(Header(r, "x-pagoda-prefill-replica"), "<none>");
  }
  EXPECT_EQ(prefill.received().size(), 0u);
  EXPECT_EQ(decode.received().size(), 2u);
  EXPECT_NE(Metrics().find("pagoda_gateway_pd_requests_total{model=\"m\",outcome=\"colocated_below_threshold\"} 2\n"),
            std::string::npos);
}

TEST_F(PrefillLegFlowTest, PrefillReplicasNeverReceiveAClientsRequest) {
  Replica prefill("prefill", &order_);
  Replica decode("decode", &order_, Replica::Prefill::kOk, 503);  // fails every request of its own
  StartGateway(PdModel({{&prefill, "p1", "prefill", ""}, {&decode, "d1", "decode", "127.0.0.1:7100"}}, 64));
  // The decode replica fails before the first byte: the retry finds no other
  // decode-capable replica and the client gets the error, never the prefill replica's answer.
  auto r = Post(LongChat(false));
  EXPECT_EQ(r.status, 502);
  for (const auto& got : prefill.received()) {
    EXPECT_TRUE(json::parse(got.body).contains("kv_transfer_params")) << got.body;
  }
  // Its circuit is open now (eject_after_failures = 1): 503, still not the prefill replica.
  auto again = Post(LongChat(false));
  EXPECT_EQ(again.status, 503);
  for (const auto& got : prefill.received()) EXPECT_TRUE(json::parse(got.body).contains("kv_transfer_params"));
}

TEST_F(PrefillLegFlowTest, AFailedPrefillReplicaIsRetriedOnceOnAnother) {
  Replica bad("bad", &order_, Replica::Prefill::kError500);
  Replica good("good", &order_);
  Replica decode("decode", &order_);
  // Both prefill replicas idle: the first (bad) is chosen first.
  StartGateway(PdModel({{&bad, "p1", "prefill", ""}, {&good, "p2", "prefill", ""},
                        {&decode, "d1", "decode", "127.0.0.1:7100"}}, 64, 2000, "m-served"));
  auto r = Post(LongChat(false));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["tag"], "decode");
  EXPECT_EQ(Header(r, "x-pagoda-prefill-replica"), "p2");
  ASSERT_EQ(bad.received().size(), 1u);
  ASSERT_EQ(good.received().size(), 1u);
  // Each leg names the model as the replicas serve it, and a fresh transfer.
  const json b = json::parse(bad.received()[0].body), g = json::parse(good.received()[0].body);
  EXPECT_EQ(g["model"], "m-served");
  EXPECT_EQ(json::parse(decode.received()[0].body)["model"], "m-served");
  EXPECT_NE(b["kv_transfer_params"]["transfer_id"], g["kv_transfer_params"]["transfer_id"]);
  EXPECT_NE(Metrics().find("pagoda_gateway_pd_requests_total{model=\"m\",outcome=\"disaggregated\"} 1\n"),
            std::string::npos);
}

TEST_F(PrefillLegFlowTest, EveryPrefillReplicaFailingStillAnswersFromTheDecodeReplica) {
  Replica five("five", &order_, Replica::Prefill::kError500);
  Replica decode("decode", &order_);
  StartGateway(PdModel({{&five, "p1", "prefill", ""}, {&decode, "d1", "decode", "127.0.0.1:7100"}}, 64));
  std::vector<std::string> events;
  auto r = Post(LongChat(true), &events);
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(json::parse(events[0])["tag"], "decode");
  EXPECT_EQ(Header(r, "x-pagoda-prefill-replica"), "<none>");
  EXPECT_EQ(decode.received().size(), 1u);
  // The failed prefill replica's circuit is open (eject_after_failures = 1):
  // the next request finds no prefill replica at all, and is served the same.
  EXPECT_EQ(Post(LongChat(false)).status, 200);
  EXPECT_EQ(five.received().size(), 1u);
  const std::string m = Metrics();
  EXPECT_NE(m.find("pagoda_gateway_pd_requests_total{model=\"m\",outcome=\"prefill_failed\"} 2\n"), std::string::npos)
      << m;
  EXPECT_NE(m.find("pagoda_gateway_pd_prefill_seconds_count 1\n"), std::string::npos) << m;  // one leg ran
}

TEST_F(PrefillLegFlowTest, AFailedTransferIsNotRetriedOnAnotherPrefillReplica) {
  Replica refused("refused", &order_, Replica::Prefill::kTransferFailed);
  Replica spare("spare", &order_);
  Replica decode("decode", &order_);
  StartGateway(PdModel({{&refused, "p1", "prefill", ""}, {&spare, "p2", "prefill", ""},
                        {&decode, "d1", "decode", "127.0.0.1:7100"}}, 64));
  auto r = Post(LongChat(false));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Header(r, "x-pagoda-prefill-replica"), "<none>");
  EXPECT_EQ(refused.received().size(), 1u);
  EXPECT_EQ(spare.received().size(), 0u);
  EXPECT_EQ(decode.received().size(), 1u);
}

TEST_F(PrefillLegFlowTest, AnUnreachablePrefillReplicaStillAnswersFromTheDecodeReplica) {
  std::string closed_url;
  {
    Replica gone("gone", &order_);
    closed_url = gone.url();  // nothing listens there once it is gone
  }
  Replica decode("decode", &order_);
  StartGateway("[[models]]\nname = \"m\"\npd_threshold_tokens = 64\npolicy = \"least_loaded\"\n"
               "[[models.deployments]]\nversion = \"v1\"\n[[models.deployments.replicas]]\nurl = \"" + closed_url +
               "\"\nname = \"p1\"\nrole = \"prefill\"\n[[models.deployments.replicas]]\nurl = \"" + decode.url() +
               "\"\nname = \"d1\"\nrole = \"decode\"\nkv_transfer = \"h:1\"\n");
  auto r = Post(LongChat(false));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["tag"], "decode");
  EXPECT_NE(Metrics().find("pagoda_gateway_upstream_errors_total{replica=\"p1\",kind=\"connect\"} 1\n"),
            std::string::npos);
}

TEST_F(PrefillLegFlowTest, AHangingPrefillReplicaTimesOutAndTheDecodeReplicaAnswers) {
  Replica hang("hang", &order_, Replica::Prefill::kHang);
  Replica decode("decode", &order_);
  StartGateway(PdModel({{&hang, "p1", "prefill", ""}, {&decode, "d1", "decode", "127.0.0.1:7100"}}, 64,
                       /*timeout_ms=*/300));
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Post(LongChat(false));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["tag"], "decode");
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2s);
  EXPECT_EQ(Header(r, "x-pagoda-prefill-replica"), "<none>");
}

TEST_F(PrefillLegFlowTest, DecodeFailureBeforeTheFirstByteRetriesColocated) {
  Replica prefill("prefill", &order_);
  Replica broken("broken", &order_, Replica::Prefill::kOk, 500);
  Replica spare("spare", &order_);
  StartGateway(PdModel({{&prefill, "p1", "prefill", ""}, {&broken, "d1", "decode", "127.0.0.1:7101"},
                        {&spare, "d2", "decode", "127.0.0.1:7102"}}, 64));
  auto r = Post(LongChat(false));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["tag"], "spare");
  EXPECT_EQ(Header(r, "x-pagoda-replica"), "d2");
  EXPECT_EQ(Header(r, "x-pagoda-prefill-replica"), "<none>");  // the retry prefilled for itself
  ASSERT_EQ(prefill.received().size(), 1u);                   // one prefill leg, for d1
  EXPECT_EQ(json::parse(prefill.received()[0].body)["kv_transfer_params"]["remote_addr"], "127.0.0.1:7101");
  EXPECT_EQ(spare.received().size(), 1u);
}

TEST_F(PrefillLegFlowTest, ClientLeavingDuringThePrefillLegCancelsIt) {
  Replica hang("hang", &order_, Replica::Prefill::kHang);
  Replica decode("decode", &order_);
  StartGateway(PdModel({{&hang, "p1", "prefill", ""}, {&decode, "d1", "decode", "127.0.0.1:7100"}}, 64,
                       /*timeout_ms=*/60000));
  const int fd = ConnectRaw();
  ASSERT_GE(fd, 0);
  const std::string body = LongChat(false);
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  for (int i = 0; i < 200 && hang.received().empty(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(hang.received().size(), 1u);  // the prefill leg is running
  ::close(fd);
  for (int i = 0; i < 300 && !hang.cancelled; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(hang.cancelled.load());  // the gateway closed its call
  EXPECT_TRUE(WaitIdle());
  EXPECT_EQ(decode.received().size(), 0u);  // and never sent the decode leg
}

}  // namespace
}  // namespace pagoda::gateway
