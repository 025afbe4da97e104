#include "gateway/gateway_config.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

// toml++ without exceptions: parse errors come back as values (no exception
// may cross a module boundary). Only this file includes toml++.
#define TOML_EXCEPTIONS 0
#undef TOML_HEADER_ONLY
#define TOML_HEADER_ONLY 1
#undef TOML_SHARED_LIB
#define TOML_SHARED_LIB 0
#include <toml++/toml.h>

namespace pagoda::gateway {
namespace {

// Reads the keys of one TOML table with type checks; remembers which keys it
// was asked for so that Finish() can reject the unknown ones. The first error
// sticks (later reads become no-ops).
class TableReader {
 public:
  TableReader(const toml::table& table, std::string where, std::string_view source, Status* error)
      : table_(table), where_(std::move(where)), source_(source), error_(error) {}

  int line() const { return static_cast<int>(table_.source().begin.line); }
  int LineOf(const toml::node& n) const {
    const int l = static_cast<int>(n.source().begin.line);
    return l > 0 ? l : line();
  }
  void Fail(int at_line, const std::string& problem) {
    if (!error_->ok()) return;
    *error_ = InvalidArgument(std::string(source_) + ":" + std::to_string(at_line) + ": " + problem);
  }
  bool failed() const { return !error_->ok(); }
  // The line of `key`'s value, else the table's.
  int KeyLine(std::string_view key) const {
    const toml::node* n = table_.get(key);
    return n != nullptr ? LineOf(*n) : line();
  }

  const toml::node* Get(std::string_view key) {
    known_.insert(std::string(key));
    return table_.get(key);
  }

  template <class T>
  bool Read(std::string_view key, T* out, const char* type_name, bool required = false) {
    const toml::node* n = Get(key);
    if (n == nullptr) {
      if (required) Fail(line(), where_ + ": missing required key '" + std::string(key) + "'");
      return false;
    }
    if (failed()) return false;
    if constexpr (std::is_same_v<T, double>) {
      if (auto v = n->value<double>()) {  // integers convert
        *out = *v;
        return true;
      }
    } else if constexpr (std::is_same_v<T, int64_t>) {
      if (auto v = n->as_integer()) {
        *out = v->get();
        return true;
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      if (auto v = n->as_boolean()) {
        *out = v->get();
        return true;
      }
    } else {
      if (auto v = n->as_string()) {
        *out = v->get();
        return true;
      }
    }
    Fail(LineOf(*n), where_ + "." + std::string(key) + ": expected " + type_name);
    return false;
  }
  bool String(std::string_view key, std::string* out, bool required = false) {
    return Read(key, out, "a string", required);
  }
  bool Bool(std::string_view key, bool* out) { return Read(key, out, "a boolean"); }
  bool Number(std::string_view key, double* out) { return Read(key, out, "a number"); }
  // An integer in [lo, hi].
  template <class T>
  bool Int(std::string_view key, T* out, int64_t lo, int64_t hi) {
    int64_t v = 0;
    if (!Read(key, &v, "an integer")) return false;
    if (v < lo || v > hi) {
      Fail(LineOf(*table_.get(key)), where_ + "." + std::string(key) + ": " + std::to_string(v) +
                                         " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return false;
    }
    *out = static_cast<T>(v);
    return true;
  }

  // The array of tables under `key` (absent: empty).
  std::vector<const toml::table*> Tables(std::string_view key) {
    std::vector<const toml::table*> out;
    const toml::node* n = Get(key);
    if (n == nullptr || failed()) return out;
    const toml::array* arr = n->as_array();
    if (arr == nullptr) {
      Fail(LineOf(*n), where_ + "." + std::string(key) + ": expected an array of tables ([[" + std::string(key) + "]])");
      return out;
    }
    for (const toml::node& e : *arr) {
      if (const toml::table* t = e.as_table()) {
        out.push_back(t);
      } else {
        Fail(LineOf(e), where_ + "." + std::string(key) + ": every element must be a table");
        return {};
      }
    }
    return out;
  }

  // Rejects keys nobody asked for.
  void Finish() {
    for (const auto& [k, v] : table_) {
      if (known_.count(std::string(k.str())) == 0) {
        Fail(LineOf(v), where_ + ": unknown key '" + std::string(k.str()) + "'");
        return;
      }
    }
  }

  std::string_view source() const { return source_; }
  Status* error() const { return error_; }

 private:
  const toml::table& table_;
  std::string where_;
  std::string_view source_;
  Status* error_;
  std::set<std::string> known_;
};

// A checked URL and its optional `ca_file` (https only, must be readable).
bool ReadUrl(TableReader& r, std::string* url, Endpoint* ep, std::string* ca_file) {
  const toml::node* n = r.Get("url");
  if (!r.String("url", url, /*required=*/true)) return false;
  auto parsed = ParseEndpoint(*url);
  if (!parsed.ok()) {
    r.Fail(r.LineOf(*n), parsed.status().message());
    return false;
  }
  *ep = std::move(*parsed);
  if (!r.String("ca_file", ca_file) || ca_file->empty()) return true;
  const int line = r.LineOf(*r.Get("ca_file"));
  if (ep->scheme != "https") {
    r.Fail(line, "ca_file '" + *ca_file + "': only for https:// URLs");
    return false;
  }
  if (std::FILE* f = std::fopen(ca_file->c_str(), "rb")) {
    std::fclose(f);
    return true;
  }
  r.Fail(line, "ca_file '" + *ca_file + "': cannot be read");
  return false;
}

bool ReadKvEndpoint(TableReader& r, std::string_view key, std::string* out) {
  if (!r.String(key, out)) return false;
  if (out->rfind("tcp://", 0) != 0 || out->size() <= 6) {
    r.Fail(r.LineOf(*r.Get(key)), std::string(key) + " '" + *out + "': expected tcp://host:port");
    return false;
  }
  return true;
}

void ParseControlTable(TableReader& r, ControlConfig* c) {
  r.String("db", &c->db, /*required=*/true);
  r.String("counters", &c->counters);
  r.String("signing_secret_env", &c->signing_secret_env);
  r.String("key_pepper_env", &c->key_pepper_env);
  r.Int("default_max_tokens", &c->default_max_tokens, 1, int64_t{1} << 30);
  for (const char* secret : {"signing_secret", "key_pepper"}) {
    if (const toml::node* n = r.Get(secret)) {
      r.Fail(r.LineOf(*n), std::string("control.") + secret + ": secrets never go in the file; name an environment "
                           "variable with " + secret + "_env");
    }
  }
  r.Finish();
}

// tls_cert and tls_key: both or neither, each readable. Whether they hold a
// certificate and its key is checked when the listener loads them.
void ReadTlsFiles(TableReader& r, GatewayConfig* c) {
  const bool cert = r.String("tls_cert", &c->tls_cert);
  const bool key = r.String("tls_key", &c->tls_key);
  if (r.failed() || (!cert && !key)) return;
  for (const auto& [name, path] : {std::pair<const char*, std::string*>{"tls_cert", &c->tls_cert},
                                   std::pair<const char*, std::string*>{"tls_key", &c->tls_key}}) {
    const toml::node* n = r.Get(name);
    if (n == nullptr) {
      const char* other = std::string_view(name) == "tls_cert" ? "tls_key" : "tls_cert";
      r.Fail(r.KeyLine(other), std::string("gateway.") + other + " needs gateway." + name + " (https takes both)");
      return;
    }
    if (path->empty()) {
      r.Fail(r.LineOf(*n), std::string("gateway.") + name + ": empty path");
      return;
    }
    if (std::FILE* f = std::fopen(path->c_str(), "rb")) {
      std::fclose(f);
    } else {
      r.Fail(r.LineOf(*n), std::string("gateway.") + name + " '" + *path + "': cannot be read");
      return;
    }
  }
}

// "host:port" split at the last ':'; nullopt when the host is empty or the
// port is not a number in [min_port, 65535].
std::optional<std::pair<std::string, uint16_t>> SplitHostPort(std::string_view s, int64_t min_port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return std::nullopt;
  int64_t port = 0;
  for (char ch : s.substr(colon + 1)) {
    if (ch < '0' || ch > '9' || port > 65535) return std::nullopt;
    port = port * 10 + (ch - '0');
  }
  if (port < min_port || port > 65535) return std::nullopt;
  return std::pair<std::string, uint16_t>(std::string(s.substr(0, colon)), static_cast<uint16_t>(port));
}

void ParseGatewayTable(TableReader& r, GatewayConfig* c) {
  std::string listen;
  if (r.String("listen", &listen)) {
    if (const auto hp = SplitHostPort(listen, 0)) {
      std::tie(c->listen_address, c->listen_port) = *hp;
    } else {
      r.Fail(r.LineOf(*r.Get("listen")), "gateway.listen '" + listen + "': expected HOST:PORT");
    }
  }
  r.Int("io_threads", &c->io_threads, 1, 64);
  r.Int("upstream_threads", &c->upstream_threads, 1, 64);
  ReadTlsFiles(r, c);
  r.String("admin_key_env", &c->admin_key_env);
  r.Bool("allow_insecure_keys", &c->allow_insecure_keys);
  r.String("zone", &c->zone);
  r.String("zone_header", &c->zone_header);
  constexpr int64_t kDay = 86'400'000;
  r.Int("health_interval_ms", &c->health_interval_ms, 10, kDay);
  r.Int("health_timeout_ms", &c->health_timeout_ms, 1, kDay);
  r.Int("connect_timeout_ms", &c->connect_timeout_ms, 1, kDay);
  r.Int("first_byte_timeout_ms", &c->first_byte_timeout_ms, 1, kDay);
  r.Int("idle_timeout_ms", &c->idle_timeout_ms, 1, kDay);
  r.Int("request_deadline_ms", &c->request_deadline_ms, 1, kDay);
  r.String("deadline_header", &c->deadline_header);
  r.Int("load_threshold_requests", &c->load_threshold_requests, 0, 1'000'000'000);
  r.Int("load_threshold_blocks", &c->load_threshold_blocks, 0, int64_t{1} << 40);
  r.Int("eject_after_failures", &c->eject_after_failures, 1, 1000);
  r.Int("circuit_open_ms", &c->circuit_open_ms, 1, kDay);
  r.Int("slow_start_ms", &c->slow_start_ms, 0, kDay);
  r.Int("readmit_after_probes", &c->readmit_after_probes, 1, 1000);
  if (r.Get("admin_key") != nullptr) {
    r.Fail(r.LineOf(*r.Get("admin_key")), "gateway.admin_key: keys never go in the file; name an environment "
                                          "variable with admin_key_env");
  }
  r.Finish();
}

bool KnownPolicy(std::string_view p) {
  return p == "cache_aware" || p == "least_loaded" || p == "power_of_two" || p == "round_robin" || p == "session";
}

void ParseReplica(TableReader& r, ReplicaConfig* rc) {
  if (!ReadUrl(r, &rc->url, &rc->endpoint, &rc->ca_file)) return;
  rc->id = rc->url;
  r.String("name", &rc->id);
  r.String("zone", &rc->zone);
  if (r.Number("weight", &rc->weight) && !(rc->weight > 0)) {
    r.Fail(r.LineOf(*r.Get("weight")), "replica weight must be > 0");
  }
  ReadKvEndpoint(r, "kv_events", &rc->kv_events);
  ReadKvEndpoint(r, "kv_events_replay", &rc->kv_events_replay);
  std::string role;
  if (r.String("role", &role)) {
    if (const auto parsed = ParseReplicaRole(role)) {
      rc->role = *parsed;
    } else {
      r.Fail(r.KeyLine("role"), "replica '" + rc->id + "': role '" + role + "' is not prefill, decode or both");
    }
  }
  if (r.String("kv_transfer", &rc->kv_transfer)) {
    if (!SplitHostPort(rc->kv_transfer, 1) || rc->kv_transfer.find("://") != std::string::npos) {
      r.Fail(r.KeyLine("kv_transfer"), "replica '" + rc->id + "': kv_transfer '" + rc->kv_transfer +
                                           "': expected host:port (the replica's --kv-transfer-listen)");
    } else if (rc->role == ReplicaRole::kPrefill) {
      r.Fail(r.KeyLine("kv_transfer"), "replica '" + rc->id + "': a prefill replica receives no KV transfers; "
                                       "kv_transfer is for decode and both replicas");
    }
  }
  r.Finish();
}

// Prefill/decode roles within one deployment: with a prefill-role replica,
// some replica must take client requests, every decode-role one needs
// kv_transfer, and at least one must be able to receive the KV.
void CheckRoles(TableReader& d, const std::string& where, const DeploymentConfig& dep,
                const std::vector<int>& replica_lines) {
  bool prefill = false, takes_clients = false, receives = false;
  for (const ReplicaConfig& rc : dep.replicas) {
    prefill = prefill || rc.role == ReplicaRole::kPrefill;
    takes_clients = takes_clients || DecodeCapable(rc.role);
    receives = receives || (DecodeCapable(rc.role) && !rc.kv_transfer.empty());
  }
  if (!prefill || d.failed()) return;
  if (!takes_clients) {
    d.Fail(d.line(), where + ": every replica has role \"prefill\"; client requests need a decode or both replica");
    return;
  }
  for (size_t i = 0; i < dep.replicas.size(); ++i) {
    const ReplicaConfig& rc = dep.replicas[i];
    if (rc.role == ReplicaRole::kDecode && rc.kv_transfer.empty()) {
      d.Fail(replica_lines[i], where + " replica '" + rc.id + "': role \"decode\" needs kv_transfer = "
                               "\"host:port\" (the deployment has prefill replicas)");
      return;
    }
  }
  if (!receives) {
    d.Fail(d.line(), where + ": prefill replicas but no decode or both replica has kv_transfer to receive their KV");
  }
}

// One [[models.deployments.schedule.windows]] table.
void ParseWindow(TableReader& w, const std::string& where, ScheduleWindow* win) {
  if (const toml::node* n = w.Get("days")) {
    const toml::array* days = n->as_array();
    if (days == nullptr || days->empty()) {
      w.Fail(w.LineOf(*n), where + ".days: expected a non-empty array of days (\"mon\"..\"sun\"); omit it for every day");
      return;
    }
    win->days = 0;
    for (const toml::node& e : *days) {
      const auto s = e.value<std::string>();
      const auto d = s ? ParseWeekday(*s) : std::nullopt;
      if (!d || (win->days & (1u << *d))) {
        w.Fail(w.LineOf(e), where + ".days: " + (s ? "'" + *s + "'" : std::string("a non-string")) +
                                (d ? " twice" : " is not a day (\"mon\"..\"sun\")"));
        return;
      }
      win->days |= static_cast<uint8_t>(1u << *d);
    }
  }
  for (const auto& [key, out, end_of_day] : {std::tuple<const char*, int*, bool>{"start", &win->start, false},
                                             std::tuple<const char*, int*, bool>{"end", &win->end, true}}) {
    std::string text;
    if (!w.String(key, &text, /*required=*/true)) return;
    auto t = ParseClockTime(text, end_of_day);
    if (!t.ok()) {
      w.Fail(w.KeyLine(key), where + "." + key + ": " + t.status().message());
      return;
    }
    *out = *t;
  }
  if (win->start == win->end) {
    w.Fail(w.KeyLine("end"), where + ".end: equals the start (an empty window; 00:00 to 24:00 is all day)");
    return;
  }
  std::string pool;
  if (!w.String("pool", &pool, /*required=*/true)) return;
  if (const auto p = ParsePool(pool)) {
    win->pool = *p;
  } else {
    w.Fail(w.KeyLine("pool"), where + ".pool: '" + pool + "' is not realtime, batch or shared");
    return;
  }
  if (const toml::node* n = w.Get("replicas")) {
    if (const auto count = n->value<int64_t>()) {
      if (*count < 1 || *count > 100000) w.Fail(w.LineOf(*n), where + ".replicas: a count must be >= 1");
      win->count = static_cast<int>(*count);
    } else if (const toml::array* ids = n->as_array(); ids != nullptr && !ids->empty()) {
      for (const toml::node& e : *ids) {
        const auto id = e.value<std::string>();
        if (!id || id->empty()) {
          w.Fail(w.LineOf(e), where + ".replicas: expected replica names or URLs (strings)");
          return;
        }
        win->replicas.push_back(*id);
      }
    } else {
      w.Fail(w.LineOf(*n), where + ".replicas: expected a count (>= 1) or a non-empty list of replica names; omit "
                                   "it for every replica");
    }
  }
}

// [models.deployments.schedule] and its [[...schedule.windows]], bound to
// the deployment's replicas: a window naming an unknown replica, or two
// windows holding one replica at once, is refused at the window's line.
void ParseSchedule(TableReader& s, const std::string& where, const std::vector<ReplicaConfig>& replicas,
                   CapacitySchedule* out) {
  std::string tz;
  if (s.String("time_zone", &tz, /*required=*/true)) {
    auto offset = ParseUtcOffset(tz);
    if (offset.ok()) {
      out->utc_offset_minutes = *offset;
    } else {
      s.Fail(s.KeyLine("time_zone"), where + ".time_zone: " + offset.status().message());
    }
  }
  std::vector<int> lines;
  for (const toml::table* wt : s.Tables("windows")) {
    TableReader w(*wt, where + " window", s.source(), s.error());
    lines.push_back(w.line());
    ScheduleWindow win;
    ParseWindow(w, where + " window", &win);
    w.Finish();
    out->windows.push_back(std::move(win));
  }
  s.Finish();
  if (s.failed()) return;
  if (out->windows.empty()) {
    s.Fail(s.line(), where + ": no [[models.deployments.schedule.windows]]");
    return;
  }
  std::vector<ScheduleReplica> names;
  for (const ReplicaConfig& rc : replicas) names.push_back({rc.id, rc.url});
  size_t bad = 0;
  auto bound = BoundSchedule::Bind(*out, names, &bad);
  if (!bound.ok()) s.Fail(bad < lines.size() ? lines[bad] : s.line(), where + ": " + bound.status().message());
}

void ParseModel(TableReader& r, ModelConfig* m, std::set<std::string>* replica_ids) {
  r.String("name", &m->name, /*required=*/true);
  if (r.String("policy", &m->policy) && !KnownPolicy(m->policy)) {
    r.Fail(r.LineOf(*r.Get("policy")), "model '" + m->name + "': unknown policy '" + m->policy +
                                           "' (cache_aware, least_loaded, power_of_two, round_robin, session)");
  }
  r.String("session_header", &m->session_header);
  m->served_model_name = m->name;
  r.String("served_model_name", &m->served_model_name);
  r.String("tokenizer_gguf", &m->tokenizer_gguf);
  r.String("tenant", &m->tenant);
  r.Int("block_size", &m->block_size, 1, 4096);
  if (r.Number("decode_load_weight", &m->decode_load_weight) && m->decode_load_weight < 0) {
    r.Fail(r.LineOf(*r.Get("decode_load_weight")), "decode_load_weight must be >= 0");
  }
  r.Int("pd_threshold_tokens", &m->pd_threshold_tokens, 0, int64_t{1} << 30);
  r.Int("pd_prefill_timeout_ms", &m->pd_prefill_timeout_ms, 1, 86'400'000);
  const bool has_current = r.String("current_version", &m->current_version);
  std::set<std::string> versions;
  for (const toml::table* dt : r.Tables("deployments")) {
    TableReader d(*dt, "model '" + m->name + "' deployment", r.source(), r.error());
    DeploymentConfig dep;
    d.String("version", &dep.version, /*required=*/true);
    if (d.Number("traffic_weight", &dep.traffic_weight) && dep.traffic_weight < 0) {
      d.Fail(d.LineOf(*d.Get("traffic_weight")), "traffic_weight must be >= 0");
    }
    if (!d.failed() && (dep.version.empty() || dep.version.find('@') != std::string::npos)) {
      d.Fail(d.line(), "model '" + m->name + "': bad version '" + dep.version + "' (non-empty, no '@')");
    }
    if (!d.failed() && !versions.insert(dep.version).second) {
      d.Fail(d.KeyLine("version"), "model '" + m->name + "': duplicate deployment version '" + dep.version + "'");
    }
    std::vector<int> replica_lines;
    for (const toml::table* rt : d.Tables("replicas")) {
      TableReader rr(*rt, "model '" + m->name + "@" + dep.version + "' replica", r.source(), r.error());
      replica_lines.push_back(rr.line());
      ReplicaConfig rc;
      ParseReplica(rr, &rc);
      if (!rr.failed() && !replica_ids->insert(rc.id).second) {
        rr.Fail(rr.KeyLine(rt->contains("name") ? "name" : "url"), "duplicate replica '" + rc.id + "' (give replicas that share a URL distinct names)");
      }
      dep.replicas.push_back(std::move(rc));
    }
    if (const toml::node* sn = d.Get("schedule"); sn != nullptr && !d.failed()) {
      const std::string where = "model '" + m->name + "@" + dep.version + "' schedule";
      if (const toml::table* st = sn->as_table()) {
        TableReader s(*st, where, r.source(), r.error());
        CapacitySchedule cs;
        ParseSchedule(s, where, dep.replicas, &cs);
        dep.schedule = std::move(cs);
      } else {
        d.Fail(d.LineOf(*sn), where + ": expected a table [models.deployments.schedule]");
      }
    }
    d.Finish();
    if (!d.failed() && dep.replicas.empty()) {
      d.Fail(d.line(), "model '" + m->name + "@" + dep.version + "': a deployment needs at least one replica");
    }
    CheckRoles(d, "model '" + m->name + "@" + dep.version + "'", dep, replica_lines);
    m->deployments.push_back(std::move(dep));
  }
  r.Finish();
  if (r.failed()) return;
  if (m->deployments.empty()) r.Fail(r.line(), "model '" + m->name + "': no [[models.deployments]]");
  if (!has_current && !m->deployments.empty()) m->current_version = m->deployments.front().version;
  if (!r.failed() && versions.count(m->current_version) == 0) {
    r.Fail(r.LineOf(*r.Get("current_version")),
           "model '" + m->name + "': current_version '" + m->current_version + "' names no deployment");
  }
}

void ParseUpstream(TableReader& r, UpstreamConfig* u) {
  r.String("name", &u->name, /*required=*/true);
  ReadUrl(r, &u->url, &u->endpoint, &u->ca_file);
  r.String("api_key_env", &u->api_key_env);
  r.String("model", &u->model);
  if (const toml::node* k = r.Get("api_key")) {
    r.Fail(r.LineOf(*k), "upstream '" + u->name + "': api_key must not be in the file; name the environment "
                                                   "variable that holds it with api_key_env");
  }
  r.Finish();
}

void ParseAlias(TableReader& r, AliasConfig* a) {
  r.String("name", &a->name, /*required=*/true);
  std::string target;
  r.String("model", &target, /*required=*/true);
  const auto [model, version] = SplitPinned(target);
  a->model = std::string(model);
  a->version = std::string(version);
  r.Bool("self_hosted_only", &a->self_hosted_only);
  r.String("fallback", &a->fallback);
  r.Finish();
  if (!r.failed() && a->self_hosted_only && !a->fallback.empty()) {
    r.Fail(r.line(), "alias '" + a->name + "': self_hosted_only and a fallback upstream contradict each other");
  }
}

// Lines of the keys that cross references are checked on.
struct KeyLines {
  std::vector<int> model_names, upstream_names, alias_names, alias_models, alias_fallbacks;
};

// Cross references: unique names across models, aliases and upstreams; alias
// targets and fallbacks exist.
void CheckReferences(TableReader& root, const GatewayConfig& c, const KeyLines& lines) {
  const auto& model_lines = lines.model_names;
  const auto& upstream_lines = lines.upstream_names;
  const auto& alias_lines = lines.alias_names;
  std::set<std::string> names;
  auto claim = [&](const std::string& name, int line, const char* what) {
    if (name.empty() || name.find('@') != std::string::npos) {
      root.Fail(line, std::string(what) + " name '" + name + "' must be non-empty and without '@'");
    } else if (!names.insert(name).second) {
      root.Fail(line, std::string("duplicate name '") + name + "' (" + what + ")");
    }
  };
  for (size_t i = 0; i < c.models.size(); ++i) claim(c.models[i].name, model_lines[i], "model");
  for (size_t i = 0; i < c.aliases.size(); ++i) claim(c.aliases[i].name, alias_lines[i], "alias");
  std::set<std::string> up_names;
  for (size_t i = 0; i < c.upstreams.size(); ++i) {
    if (!up_names.insert(c.upstreams[i].name).second) {
      root.Fail(upstream_lines[i], "duplicate upstream '" + c.upstreams[i].name + "'");
    }
  }
  for (size_t i = 0; i < c.aliases.size(); ++i) {
    const AliasConfig& a = c.aliases[i];
    const ModelConfig* m = c.FindModel(a.model);
    if (m == nullptr) {
      root.Fail(lines.alias_models[i], "alias '" + a.name + "' names unknown model '" + a.model + "'");
      continue;
    }
    bool version_ok = a.version.empty();
    for (const auto& d : m->deployments) version_ok = version_ok || d.version == a.version;
    if (!version_ok) root.Fail(lines.alias_models[i], "alias '" + a.name + "' names unknown version '" + a.version + "'");
    if (!a.fallback.empty() && c.FindUpstream(a.fallback) == nullptr) {
      root.Fail(lines.alias_fallbacks[i], "alias '" + a.name + "' names unknown fallback upstream '" + a.fallback + "'");
    }
  }
}

}  // namespace

std::string Endpoint::ToString() const {
  return scheme + "://" + host + ":" + std::to_string(port) + base_path;
}

Result<Endpoint> ParseEndpoint(std::string_view url) {
  Endpoint ep;
  std::string_view rest = url;
  if (rest.rfind("http://", 0) == 0) {
    ep.scheme = "http";
    rest.remove_prefix(7);
  } else if (rest.rfind("https://", 0) == 0) {
    ep.scheme = "https";
    rest.remove_prefix(8);
  } else {
    return InvalidArgument("url '" + std::string(url) + "': expected http://host:port or https://host");
  }
  const size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (slash != std::string_view::npos) ep.base_path = std::string(rest.substr(slash));
  while (!ep.base_path.empty() && ep.base_path.back() == '/') ep.base_path.pop_back();
  if (hostport.find_first_of("?#@ ") != std::string_view::npos || ep.base_path.find_first_of("?# ") != std::string::npos) {
    return InvalidArgument("url '" + std::string(url) + "': no query, fragment, user info or spaces allowed");
  }
  const size_t colon = hostport.rfind(':');
  int64_t port = ep.scheme == "https" ? 443 : 80;
  if (colon != std::string_view::npos) {
    const std::string_view p = hostport.substr(colon + 1);
    port = p.empty() ? -1 : 0;
    for (char ch : p) {
      if (ch < '0' || ch > '9' || port > 65535) {
        port = -1;
        break;
      }
      port = port * 10 + (ch - '0');
    }
    hostport = hostport.substr(0, colon);
  }
  if (hostport.empty() || port <= 0 || port > 65535) {
    return InvalidArgument("url '" + std::string(url) + "': bad host or port");
  }
  ep.host = std::string(hostport);
  ep.port = static_cast<uint16_t>(port);
  return ep;
}

std::pair<std::string_view, std::string_view> SplitPinned(std::string_view model) {
  const size_t at = model.rfind('@');
  if (at == std::string_view::npos) return {model, {}};
  return {model.substr(0, at), model.substr(at + 1)};
}

const ModelConfig* GatewayConfig::FindModel(std::string_view name) const {
  for (const auto& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const UpstreamConfig* GatewayConfig::FindUpstream(std::string_view name) const {
  for (const auto& u : upstreams) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

Result<GatewayConfig> ParseGatewayConfig(std::string_view toml_text, std::string_view source_name) {
  toml::parse_result parsed = toml::parse(toml_text, source_name);
  if (!parsed) {
    const toml::parse_error& e = parsed.error();
    return InvalidArgument(std::string(source_name) + ":" + std::to_string(e.source().begin.line) +
                           ": TOML syntax: " + std::string(e.description()));
  }
  const toml::table& doc = parsed.table();
  Status error;
  TableReader root(doc, "config", source_name, &error);
  GatewayConfig c;
  if (const toml::node* g = root.Get("gateway")) {
    if (const toml::table* gt = g->as_table()) {
      TableReader r(*gt, "gateway", source_name, &error);
      ParseGatewayTable(r, &c);
    } else {
      root.Fail(root.LineOf(*g), "gateway: expected a table [gateway]");
    }
  }
  if (const toml::node* ct = root.Get("control")) {
    if (const toml::table* t = ct->as_table()) {
      TableReader r(*t, "control", source_name, &error);
      ParseControlTable(r, &c.control);
    } else {
      root.Fail(root.LineOf(*ct), "control: expected a table [control]");
    }
  }
  std::set<std::string> replica_ids;
  KeyLines lines;
  for (const toml::table* t : root.Tables("models")) {
    TableReader r(*t, "model", source_name, &error);
    lines.model_names.push_back(r.KeyLine("name"));
    c.models.emplace_back();
    ParseModel(r, &c.models.back(), &replica_ids);
  }
  for (const toml::table* t : root.Tables("upstreams")) {
    TableReader r(*t, "upstream", source_name, &error);
    lines.upstream_names.push_back(r.KeyLine("name"));
    c.upstreams.emplace_back();
    ParseUpstream(r, &c.upstreams.back());
  }
  for (const toml::table* t : root.Tables("aliases")) {
    TableReader r(*t, "alias", source_name, &error);
    lines.alias_names.push_back(r.KeyLine("name"));
    lines.alias_models.push_back(r.KeyLine("model"));
    lines.alias_fallbacks.push_back(r.KeyLine("fallback"));
    c.aliases.emplace_back();
    ParseAlias(r, &c.aliases.back());
  }
  root.Finish();
  if (error.ok()) CheckReferences(root, c, lines);
  if (error.ok() && c.models.empty()) root.Fail(1, "no [[models]]: the gateway would serve nothing");
  if (!error.ok()) return error;
  return c;
}

Result<GatewayConfig> LoadGatewayConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseGatewayConfig(ss.str(), path);
}

}  // namespace pagoda::gateway
