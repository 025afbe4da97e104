#include "gateway/gateway_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <string>

namespace pagoda::gateway {
namespace {

// The 1-based line of the first line of `text` that contains `marker`: the
// reference the parser's line numbers are checked against.
int LineOf(const std::string& text, const std::string& marker) {
  const size_t pos = text.find(marker);
  EXPECT_NE(pos, std::string::npos) << marker;
  int line = 1;
  for (size_t i = 0; i < pos; ++i) line += text[i] == '\n';
  return line;
}

const char* kGood = R"(
[gateway]
listen = "0.0.0.0:9000"
zone = "eu"
admin_key_env = "GW_ADMIN"
load_threshold_requests = 8

[[models]]
name = "stories"
policy = "least_loaded"
current_version = "v2"

[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:8001"
zone = "eu"

[[models.deployments]]
version = "v2"
traffic_weight = 1.0
[[models.deployments.replicas]]
url = "http://127.0.0.1:8002/"
name = "r2"
weight = 2
[[models.deployments.replicas]]
url = "http://127.0.0.1:8003"
zone = "us"
kv_events = "tcp://127.0.0.1:5557"

[[upstreams]]
name = "openai"
url = "https://api.openai.com/v1"
api_key_env = "OPENAI_KEY"
model = "gpt-4o-mini"

[[aliases]]
name = "chat"
model = "stories@v1"
fallback = "openai"

[[aliases]]
name = "code-review"
model = "stories"
self_hosted_only = true
)";

TEST(GatewayConfigTest, ParsesEveryTable) {
  auto c = ParseGatewayConfig(kGood);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->listen_address, "0.0.0.0");
  EXPECT_EQ(c->listen_port, 9000);
  EXPECT_EQ(c->zone, "eu");
  EXPECT_EQ(c->load_threshold_requests, 8);
  ASSERT_EQ(c->models.size(), 1u);
  const ModelConfig& m = c->models[0];
  EXPECT_EQ(m.policy, "least_loaded");
  EXPECT_EQ(m.current_version, "v2");
  ASSERT_EQ(m.deployments.size(), 2u);
  EXPECT_EQ(m.deployments[0].replicas[0].id, "http://127.0.0.1:8001");
  EXPECT_EQ(m.deployments[1].replicas[0].id, "r2");
  EXPECT_EQ(m.deployments[1].replicas[0].endpoint.port, 8002);
  EXPECT_EQ(m.deployments[1].replicas[0].endpoint.base_path, "");
  EXPECT_DOUBLE_EQ(m.deployments[1].replicas[0].weight, 2.0);
  EXPECT_EQ(m.deployments[1].replicas[1].kv_events, "tcp://127.0.0.1:5557");
  ASSERT_EQ(c->upstreams.size(), 1u);
  EXPECT_EQ(c->upstreams[0].endpoint.scheme, "https");
  EXPECT_EQ(c->upstreams[0].endpoint.port, 443);
  EXPECT_EQ(c->upstreams[0].endpoint.base_path, "/v1");
  ASSERT_EQ(c->aliases.size(), 2u);
  EXPECT_EQ(c->aliases[0].model, "stories");
  EXPECT_EQ(c->aliases[0].version, "v1");
  EXPECT_EQ(c->aliases[0].fallback, "openai");
  EXPECT_TRUE(c->aliases[1].self_hosted_only);
}

// `s` with the first occurrence of `from` replaced by `to`.
std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

// kGood with the first occurrence of `from` replaced by `to`.
std::string Edit(const std::string& from, const std::string& to) { return Replace(kGood, from, to); }

struct BadCase {
  const char* name;
  std::string text;
  std::string marker;   // the line the error must name
  std::string problem;  // a substring of the message
};

class GatewayConfigErrorTest : public ::testing::TestWithParam<int> {};

std::vector<BadCase> BadCases() {
  return {
      {"syntax", Edit("zone = \"eu\"\nadmin", "zone = \"eu\nadmin"), "zone = \"eu", "TOML syntax"},
      {"unknown_key", Edit("policy = \"least_loaded\"", "policy = \"least_loaded\"\npolcy = 1"), "polcy",
       "unknown key 'polcy'"},
      {"wrong_type", Edit("load_threshold_requests = 8", "load_threshold_requests = \"8\""),
       "load_threshold_requests", "expected an integer"},
      {"out_of_range", Edit("load_threshold_requests = 8", "load_threshold_requests = -1"),
       "load_threshold_requests", "out of range"},
      {"bad_listen", Edit("\"0.0.0.0:9000\"", "\"0.0.0.0:99999\""), "listen =", "expected HOST:PORT"},
      {"unknown_policy", Edit("\"least_loaded\"", "\"fastest\""), "policy =", "unknown policy 'fastest'"},
      {"bad_url", Edit("http://127.0.0.1:8001", "ftp://127.0.0.1:8001"), "ftp://", "expected http://"},
      {"bad_port", Edit("http://127.0.0.1:8001", "http://127.0.0.1:80x1"), "80x1", "bad host or port"},
      {"ca_file_on_http", Edit("url = \"http://127.0.0.1:8001\"", "url = \"http://127.0.0.1:8001\"\nca_file = \"/etc/hostname\""),
       "ca_file", "only for https:// URLs"},
      {"ca_file_unreadable", Edit("url = \"https://api.openai.com/v1\"", "url = \"https://api.openai.com/v1\"\nca_file = \"/nonexistent/ca.pem\""),
       "ca_file", "cannot be read"},
      {"literal_api_key", Edit("api_key_env = \"OPENAI_KEY\"", "api_key = \"sk-123\""), "api_key =",
       "api_key must not be in the file"},
      {"duplicate_version", Edit("version = \"v2\"\ntraffic", "version = \"v1\"\ntraffic"), "version = \"v1\"\ntraffic",
       "duplicate deployment version 'v1'"},
      {"duplicate_replica", Edit("http://127.0.0.1:8003", "http://127.0.0.1:8001"), "url = \"http://127.0.0.1:8001\"\nzone = \"us\"",
       "duplicate replica"},
      {"dangling_current", Edit("current_version = \"v2\"", "current_version = \"v9\""), "current_version",
       "names no deployment"},
      {"alias_unknown_model", Edit("model = \"stories@v1\"", "model = \"nope\""), "model = \"nope\"",
       "unknown model 'nope'"},
      {"alias_unknown_version", Edit("model = \"stories@v1\"", "model = \"stories@v7\""), "stories@v7",
       "unknown version 'v7'"},
      {"alias_unknown_fallback", Edit("fallback = \"openai\"", "fallback = \"azure\""), "azure",
       "unknown fallback upstream 'azure'"},
      {"duplicate_name", Edit("name = \"code-review\"", "name = \"stories\""), "name = \"stories\"\nmodel",
       "duplicate name 'stories'"},
      {"bad_kv_events", Edit("tcp://127.0.0.1:5557", "udp://x"), "udp://", "expected tcp://host:port"},
      {"negative_decode_load_weight", Edit("policy = \"least_loaded\"", "policy = \"least_loaded\"\ndecode_load_weight = -0.5"),
       "decode_load_weight", "decode_load_weight must be >= 0"},
  };
}

// Each case is refused with its marker's line and its problem.
void ExpectErrorsNameTheirLines(const std::vector<BadCase>& cases) {
  for (const BadCase& bc : cases) {
    auto c = ParseGatewayConfig(bc.text, "gw.toml");
    EXPECT_FALSE(c.ok()) << bc.name;
    if (c.ok()) continue;
    const std::string& msg = c.status().message();
    // The marker may span two lines: the error names its first.
    const std::string want = "gw.toml:" + std::to_string(LineOf(bc.text, bc.marker)) + ":";
    EXPECT_EQ(msg.rfind(want, 0), 0u) << bc.name << ": " << msg << " (want prefix " << want << ")";
    EXPECT_NE(msg.find(bc.problem), std::string::npos) << bc.name << ": " << msg;
  }
}

TEST(GatewayConfigTest, EveryErrorNamesItsLine) { ExpectErrorsNameTheirLines(BadCases()); }

TEST(GatewayConfigTest, DuplicateNameErrorNamesTheSecondAlias) {
  // The reference: the line of the second alias's name.
  const std::string text = Edit("name = \"code-review\"", "name = \"chat\"");
  auto c = ParseGatewayConfig(text, "gw.toml");
  ASSERT_FALSE(c.ok());
  const size_t second = text.rfind("name = \"chat\"");
  int line = 1;
  for (size_t i = 0; i < second; ++i) line += text[i] == '\n';
  EXPECT_EQ(c.status().message().rfind("gw.toml:" + std::to_string(line) + ":", 0), 0u) << c.status().message();
}

TEST(GatewayConfigTest, RejectsEmptyAndReplicalessConfigs) {
  EXPECT_FALSE(ParseGatewayConfig("").ok());
  auto c = ParseGatewayConfig("[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"v1\"\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("at least one replica"), std::string::npos) << c.status().message();
}

TEST(GatewayConfigTest, CurrentVersionDefaultsToTheFirstDeployment) {
  auto c = ParseGatewayConfig(
      "[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"a\"\n[[models.deployments.replicas]]\n"
      "url = \"http://localhost:1\"\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->models[0].current_version, "a");
  EXPECT_EQ(c->models[0].policy, "cache_aware");
}

TEST(GatewayConfigTest, ParseEndpointSplitsUrls) {
  auto e = ParseEndpoint("http://example.com/base/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "example.com");
  EXPECT_EQ(e->port, 80);
  EXPECT_EQ(e->base_path, "/base");
  EXPECT_FALSE(ParseEndpoint("http://:80").ok());
  EXPECT_FALSE(ParseEndpoint("http://h:0").ok());
  EXPECT_FALSE(ParseEndpoint("http://h:1?x").ok());
  EXPECT_FALSE(ParseEndpoint("h:1").ok());
}

TEST(GatewayConfigTest, SplitPinnedSeparatesVersion) {
  EXPECT_EQ(SplitPinned("m@v2").first, "m");
  EXPECT_EQ(SplitPinned("m@v2").second, "v2");
  EXPECT_EQ(SplitPinned("m").second, "");
}

TEST(GatewayConfigTest, HttpsReplicasAndUpstreamsTakeACaFile) {
  const std::string ca = (std::filesystem::temp_directory_path() / "pagoda_cfg_test_ca.pem").string();
  std::ofstream(ca) << "not checked here: read by the TLS client\n";
  auto c = ParseGatewayConfig("[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"v1\"\n"
                              "[[models.deployments.replicas]]\nurl = \"https://gpu-a.internal:8443\"\nca_file = \"" +
                              ca + "\"\n[[upstreams]]\nname = \"u\"\nurl = \"https://api.example.com/v1\"\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ReplicaConfig& r = c->models[0].deployments[0].replicas[0];
  EXPECT_EQ(r.endpoint.scheme, "https");
  EXPECT_EQ(r.endpoint.port, 8443);
  EXPECT_EQ(r.ca_file, ca);
  EXPECT_EQ(c->upstreams[0].ca_file, "");  // the system store
  std::filesystem::remove(ca);
}

TEST(GatewayConfigTest, TlsCertAndKeyGoTogetherAndMustBeReadable) {
  const std::string cert = (std::filesystem::temp_directory_path() / "pagoda_cfg_test_cert.pem").string();
  const std::string key = (std::filesystem::temp_directory_path() / "pagoda_cfg_test_key.pem").string();
  std::ofstream(cert) << "not checked here: loaded by the listener\n";
  std::ofstream(key) << "likewise\n";
  const std::string models =
      "[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"v1\"\n[[models.deployments.replicas]]\n"
      "url = \"http://localhost:1\"\n";
  auto ok = ParseGatewayConfig("[gateway]\nlisten = \"0.0.0.0:8443\"\ntls_cert = \"" + cert + "\"\ntls_key = \"" + key +
                               "\"\n" + models);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->tls_cert, cert);
  EXPECT_EQ(ok->tls_key, key);
  auto plain = ParseGatewayConfig(models);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->tls_cert, "");

  auto lonely = ParseGatewayConfig("[gateway]\nio_threads = 2\ntls_cert = \"" + cert + "\"\n" + models, "gw.toml");
  ASSERT_FALSE(lonely.ok());
  EXPECT_EQ(lonely.status().message().rfind("gw.toml:3: gateway.tls_cert needs gateway.tls_key", 0), 0u)
      << lonely.status().message();
  auto missing = ParseGatewayConfig("[gateway]\ntls_cert = \"" + cert + "\"\ntls_key = \"/nonexistent/k.pem\"\n" +
                                    models, "gw.toml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().rfind("gw.toml:3: gateway.tls_key '/nonexistent/k.pem': cannot be read", 0), 0u)
      << missing.status().message();
  auto typed = ParseGatewayConfig("[gateway]\ntls_cert = 1\ntls_key = \"" + key + "\"\n" + models, "gw.toml");
  ASSERT_FALSE(typed.ok());
  EXPECT_EQ(typed.status().message().rfind("gw.toml:2: gateway.tls_cert: expected a string", 0), 0u)
      << typed.status().message();
  std::filesystem::remove(cert);
  std::filesystem::remove(key);
}

const char* kScheduled = R"(
[[models]]
name = "m"
[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1001"
name = "a"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1002"
name = "b"
[models.deployments.schedule]
time_zone = "+09:00"
[[models.deployments.schedule.windows]]
days = ["mon", "tue", "wed", "thu", "fri"]
start = "08:00"
end = "20:00"
pool = "realtime"
[[models.deployments.schedule.windows]]
start = "20:00"
end = "08:00"
pool = "batch"
replicas = ["b"]
)";

TEST(GatewayConfigTest, ParsesCapacitySchedules) {
  auto c = ParseGatewayConfig(kScheduled);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const auto& s = c->models[0].deployments[0].schedule;
  ASSERT_TRUE(s);
  EXPECT_EQ(s->utc_offset_minutes, 540);
  ASSERT_EQ(s->windows.size(), 2u);
  EXPECT_EQ(s->windows[0].days, 0x1f);
  EXPECT_EQ(s->windows[0].start, 8 * 60);
  EXPECT_EQ(s->windows[0].pool, Pool::kRealtime);
  EXPECT_TRUE(s->windows[0].replicas.empty());
  EXPECT_EQ(s->windows[1].days, kEveryDay);
  EXPECT_EQ(s->windows[1].end, 8 * 60);
  EXPECT_EQ(s->windows[1].replicas, std::vector<std::string>{"b"});
  auto none = ParseGatewayConfig(
      "[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"a\"\n[[models.deployments.replicas]]\n"
      "url = \"http://localhost:1\"\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->models[0].deployments[0].schedule);
}

TEST(GatewayConfigTest, ScheduleErrorsNameTheirLineAndField) {
  auto edit = [](const std::string& from, const std::string& to) { return Replace(kScheduled, from, to); };
  const std::vector<BadCase> cases = {
      {"bad_start", edit("start = \"08:00\"", "start = \"8:00\""), "start = \"8:00\"",
       "model 'm@v1' schedule window.start: '8:00' is not HH:MM"},
      {"bad_end", edit("end = \"08:00\"", "end = \"08:99\""), "end = \"08:99\"", "window.end: '08:99' is out of range"},
      {"iana_zone", edit("\"+09:00\"", "\"Asia/Tokyo\""), "time_zone", "schedule.time_zone: 'Asia/Tokyo' is not a fixed"},
      {"missing_zone", edit("time_zone = \"+09:00\"\n", ""), "[models.deployments.schedule]",
       "missing required key 'time_zone'"},
      {"bad_pool", edit("pool = \"batch\"", "pool = \"cheap\""), "pool = \"cheap\"", "window.pool: 'cheap'"},
      {"bad_day", edit("\"thu\"", "\"thursdai\""), "days =", "window.days: 'thursdai' is not a day"},
      {"unknown_key", edit("pool = \"batch\"", "pool = \"batch\"\ncolour = 1"), "colour", "unknown key 'colour'"},
      {"unknown_replica", edit("replicas = [\"b\"]", "replicas = [\"z\"]"),
       "[[models.deployments.schedule.windows]]\nstart = \"20:00\"", "windows[1].replicas: 'z' is no replica"},
      {"overlap", edit("end = \"08:00\"", "end = \"09:00\""),
       "[[models.deployments.schedule.windows]]\nstart = \"20:00\"", "windows[0] and windows[1] overlap"},
      {"too_many", edit("replicas = [\"b\"]", "replicas = 3"),
       "[[models.deployments.schedule.windows]]\nstart = \"20:00\"", "3 replicas, but the deployment has 2"},
      {"no_windows", "[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"v1\"\n"
                     "[[models.deployments.replicas]]\nurl = \"http://localhost:1\"\n"
                     "[models.deployments.schedule]\ntime_zone = \"UTC\"\n",
       "[models.deployments.schedule]", "no [[models.deployments.schedule.windows]]"},
  };
  ExpectErrorsNameTheirLines(cases);
}

const char* kDisaggregated = R"(
[[models]]
name = "m"
pd_threshold_tokens = 512
pd_prefill_timeout_ms = 5000
[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:8001"
name = "p1"
role = "prefill"
[[models.deployments.replicas]]
url = "http://127.0.0.1:8002"
name = "d1"
role = "decode"
kv_transfer = "10.0.0.2:7100"
[[models.deployments.replicas]]
url = "http://127.0.0.1:8003"
name = "b1"
role = "both"
)";

TEST(GatewayConfigTest, ParsesReplicaRolesAndDisaggregationKeys) {
  auto c = ParseGatewayConfig(kDisaggregated);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const ModelConfig& m = c->models[0];
  EXPECT_EQ(m.pd_threshold_tokens, 512);
  EXPECT_EQ(m.pd_prefill_timeout_ms, 5000);
  const auto& rs = m.deployments[0].replicas;
  EXPECT_EQ(rs[0].role, ReplicaRole::kPrefill);
  EXPECT_EQ(rs[1].role, ReplicaRole::kDecode);
  EXPECT_EQ(rs[1].kv_transfer, "10.0.0.2:7100");
  EXPECT_EQ(rs[2].role, ReplicaRole::kBoth);
  EXPECT_EQ(rs[2].kv_transfer, "");  // a both replica without kv_transfer only serves colocated
  // Defaults: every replica both, threshold 256 tokens, 30 s per prefill leg.
  auto d = ParseGatewayConfig(kGood);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->models[0].pd_threshold_tokens, 256);
  EXPECT_EQ(d->models[0].pd_prefill_timeout_ms, 30000);
  EXPECT_EQ(d->models[0].deployments[1].replicas[0].role, ReplicaRole::kBoth);
  // A decode replica without prefill replicas beside it needs no kv_transfer.
  auto plain = ParseGatewayConfig(
      "[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"a\"\n[[models.deployments.replicas]]\n"
      "url = \"http://localhost:1\"\nrole = \"decode\"\n");
  EXPECT_TRUE(plain.ok()) << plain.status().message();
}

TEST(GatewayConfigTest, DisaggregationErrorsNameTheirLine) {
  auto edit = [](const std::string& from, const std::string& to) { return Replace(kDisaggregated, from, to); };
  const std::vector<BadCase> cases = {
      {"unknown_role", edit("role = \"both\"", "role = \"encode\""), "role = \"encode\"",
       "replica 'b1': role 'encode' is not prefill, decode or both"},
      {"role_not_a_string", edit("role = \"both\"", "role = 2"), "role = 2", "role: expected a string"},
      {"kv_transfer_with_scheme", edit("\"10.0.0.2:7100\"", "\"tcp://10.0.0.2:7100\""), "kv_transfer",
       "kv_transfer 'tcp://10.0.0.2:7100': expected host:port"},
      {"kv_transfer_without_port", edit("\"10.0.0.2:7100\"", "\"10.0.0.2\""), "kv_transfer", "expected host:port"},
      {"kv_transfer_port_zero", edit("\"10.0.0.2:7100\"", "\"10.0.0.2:0\""), "kv_transfer", "expected host:port"},
      {"kv_transfer_on_prefill", edit("role = \"prefill\"", "role = \"prefill\"\nkv_transfer = \"h:1\""),
       "kv_transfer = \"h:1\"", "a prefill replica receives no KV transfers"},
      {"decode_without_kv_transfer", edit("kv_transfer = \"10.0.0.2:7100\"\n", ""),
       "[[models.deployments.replicas]]\nurl = \"http://127.0.0.1:8002\"",
       "replica 'd1': role \"decode\" needs kv_transfer = \"host:port\" (the deployment has prefill replicas)"},
      {"only_prefill", "[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"v1\"\n"
                       "[[models.deployments.replicas]]\nurl = \"http://localhost:1\"\nrole = \"prefill\"\n",
       "[[models.deployments]]", "every replica has role \"prefill\""},
      {"nowhere_to_send", edit("role = \"decode\"\nkv_transfer = \"10.0.0.2:7100\"", "role = \"both\""),
       "[[models.deployments]]", "no decode or both replica has kv_transfer"},
      {"negative_threshold", edit("pd_threshold_tokens = 512", "pd_threshold_tokens = -1"), "pd_threshold_tokens",
       "out of range"},
      {"zero_timeout", edit("pd_prefill_timeout_ms = 5000", "pd_prefill_timeout_ms = 0"), "pd_prefill_timeout_ms",
       "out of range"},
  };
  ExpectErrorsNameTheirLines(cases);
}

}  // namespace
}  // namespace pagoda::gateway
