// GatewayConfig: the gateway's configuration as a value, parsed from TOML
// (schema in docs/GATEWAY.md). ParseGatewayConfig validates everything the
// gateway relies on (types, unknown keys, duplicate names, dangling
// references, URLs) and names the line of the first problem. API keys are
// never in the file: upstreams name the environment variable that holds them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gateway/capacity_schedule.h"
#include "gateway/replica_role.h"

namespace pagoda::gateway {

// "http://host:port" split up; `base_path` is the URL's path without a trailing '/'.
struct Endpoint {
  std::string scheme;  // "http" or "https"
  std::string host;
  uint16_t port = 0;
  std::string base_path;
  std::string ToString() const;
};

// Parses "http://host[:port][/path]" or "https://host[:port][/path]".
Result<Endpoint> ParseEndpoint(std::string_view url);

struct ReplicaConfig {
  std::string id;  // `name`, else the URL
  std::string url;
  Endpoint endpoint;
  std::string zone;
  double weight = 1.0;
  std::string ca_file;           // https: PEM CAs to trust instead of the system store; "" when none
  std::string kv_events;         // tcp://host:port of its KV-event PUB socket; "" when none
  std::string kv_events_replay;  // its replay (ROUTER) socket; "" when none
  // Prefill/decode disaggregation: which legs it serves, and the "host:port"
  // of its KV-transfer listener (serve --kv-transfer-listen) where prefill
  // replicas push a prompt's KV blocks for it; "" when it receives none.
  ReplicaRole role = ReplicaRole::kBoth;
  std::string kv_transfer;
};

struct DeploymentConfig {
  std::string version;
  double traffic_weight = 0;  // share of unpinned traffic (0 unless set; the current version gets all when every weight is 0)
  std::vector<ReplicaConfig> replicas;
  // [models.deployments.schedule]: which pool each replica serves when
  // (capacity_schedule.h); none: every replica is in the shared pool.
  std::optional<CapacitySchedule> schedule;
};

struct ModelConfig {
  std::string name;
  std::string policy = "cache_aware";
  std::string session_header = "x-session-id";
  std::string current_version;
  std::string served_model_name;  // the `model` the replicas expect (default: name)
  std::string tokenizer_gguf;  // optional, for cache_aware
  int block_size = 16;
  // cache_aware: what one KV block held by a running request costs, in
  // prompt blocks to compute (CacheAwareOptions::decode_block_weight).
  double decode_load_weight = 1.0;
  // Prefill/decode disaggregation (deployments with prefill-role replicas):
  // a request whose uncached prompt (prompt tokens minus those the decode
  // replica is predicted to hold) is longer than this is prefilled on a
  // prefill replica first; the prefill leg's time limit.
  int64_t pd_threshold_tokens = 256;
  int64_t pd_prefill_timeout_ms = 30'000;
  // A dedicated deployment: only this tenant's keys see and use the model
  // (with [control]); "" = shared by every tenant.
  std::string tenant;
  std::vector<DeploymentConfig> deployments;
};

struct UpstreamConfig {
  std::string name;
  std::string url;
  Endpoint endpoint;
  std::string api_key_env;  // environment variable holding the key; "" when none
  std::string model;        // the model name to send upstream
  std::string ca_file;      // https: PEM CAs to trust instead of the system store; "" when none
};

struct AliasConfig {
  std::string name;
  std::string model;    // the real model
  std::string version;  // "" = follow the model's current version
  bool self_hosted_only = false;
  std::string fallback;  // upstream name; "" when none
};

// [control]: tenants, API keys, limits and usage metering (docs/CONTROL_PLANE.md).
// Without `db` the gateway is open: no keys are asked for.
struct ControlConfig {
  std::string db;        // "sqlite:///path.db" (or a plain path) or "postgresql://..."; "" = off
  std::string counters;  // rate-limit counters: "" = the db itself, or "redis://host:port"
  std::string signing_secret_env;  // secret shared with replicas for signed tenant headers ("" = unsigned)
  std::string key_pepper_env;      // HMAC pepper for key hashes ("" = plain SHA-256)
  int64_t default_max_tokens = 4096;  // reserved for the completion when a request names no max_tokens
  bool enabled() const { return !db.empty(); }
};

struct GatewayConfig {
  std::string listen_address = "127.0.0.1";
  uint16_t listen_port = 8080;
  int io_threads = 2;
  int upstream_threads = 2;
  // https on the listener: PEM certificate (chain) and private key, both or
  // neither ([gateway] tls_cert / tls_key). A reload reloads them; turning TLS
  // on or off needs a restart.
  std::string tls_cert;
  std::string tls_key;
  std::string admin_key_env;  // environment variable holding the admin key; "" disables the admin API
  // API keys and the admin key over plain HTTP (loopback use, or TLS ended
  // in front of the gateway); otherwise only over TLS.
  bool allow_insecure_keys = false;
  ControlConfig control;
  std::string zone;           // the gateway's own zone
  std::string zone_header = "x-pagoda-zone";
  int64_t health_interval_ms = 2000;
  int64_t health_timeout_ms = 1000;
  int64_t connect_timeout_ms = 2000;
  int64_t first_byte_timeout_ms = 60'000;
  int64_t idle_timeout_ms = 30'000;
  int64_t request_deadline_ms = 300'000;
  std::string deadline_header = "x-pagoda-deadline-ms";
  int64_t load_threshold_requests = 0;  // a replica with this many active requests is "past the threshold" (0: none)
  int64_t load_threshold_blocks = 0;    // likewise in active blocks (0: none)
  int eject_after_failures = 3;         // consecutive passive failures that open the circuit
  int64_t circuit_open_ms = 5000;       // open -> half-open after this
  int64_t slow_start_ms = 10'000;       // weight ramp after re-admission
  int readmit_after_probes = 2;         // passing probes before an ejected replica is healthy again
  std::vector<ModelConfig> models;
  std::vector<UpstreamConfig> upstreams;
  std::vector<AliasConfig> aliases;

  const ModelConfig* FindModel(std::string_view name) const;
  const UpstreamConfig* FindUpstream(std::string_view name) const;
};

// Parses and validates. Error messages read "<source>:<line>: <problem>".
Result<GatewayConfig> ParseGatewayConfig(std::string_view toml_text, std::string_view source_name = "config");
Result<GatewayConfig> LoadGatewayConfig(const std::string& path);

// "name@version" -> {name, version}; no '@' -> {name, ""}.
std::pair<std::string_view, std::string_view> SplitPinned(std::string_view model);

}  // namespace pagoda::gateway
