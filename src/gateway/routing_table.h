// RoutingTable: an immutable snapshot of what the gateway serves, built from
// a GatewayConfig: models with their deployments (replicas, per-deployment
// traffic weights), external upstreams and aliases. A reload builds a new
// table from the previous one so that replicas that stay (same id and URL)
// keep their live state (load, health, circuit), policies whose model kept
// its policy name keep their learned state, and each model that stays keeps
// its KvIndex (the event-fed cache view) and its RequestTokenizer (while
// tokenizer_gguf names the same file); replicas that leave are forgotten by
// the index and the policy. Requests hold a shared_ptr to the
// table they were routed with. Only the traffic state (per-deployment weights
// and the current version) changes after construction: a rollout controller
// shifts it, one swap under a mutex.
// Thread safety: all methods from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "gateway/gateway_config.h"
#include "gateway/kv_index.h"
#include "gateway/replica.h"
#include "gateway/request_tokenizer.h"
#include "gateway/routing_policy.h"

namespace pagoda::gateway {

struct Deployment {
  std::string version;
  std::string key;  // "model@version"
  std::vector<std::shared_ptr<const Replica>> replicas;
};

struct ModelRoute {
  ModelConfig config;
  std::vector<Deployment> deployments;
  std::shared_ptr<RoutingPolicy> policy;
  // Which blocks each replica holds, keyed by replica id, fed by the KV
  // events of the model's replicas (kv_event_feed.h). Never null.
  std::shared_ptr<KvIndex> kv_index;
  // tokenizer_gguf's tokenizer and template; null when none is configured.
  std::shared_ptr<const RequestTokenizer> tokenizer;
  const Deployment* FindDeployment(std::string_view version) const;
};

// Reads an environment variable; nullopt when unset (tests inject their own).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup ProcessEnv();

class RoutingTable {
 public:
  // Errors: an upstream's api_key_env is unset, a policy cannot be built, a
  // tokenizer_gguf does not load.
  static Result<std::shared_ptr<RoutingTable>> Build(const GatewayConfig& config, const RoutingTable* previous,
                                                     const EnvLookup& env);

  const GatewayConfig& config() const { return config_; }
  const ModelRoute* FindModel(std::string_view name) const;
  const AliasConfig* FindAlias(std::string_view name) const;
  // The upstream as a replica (external()).
  std::shared_ptr<const Replica> FindUpstream(std::string_view name) const;
  // Every replica of every deployment, then the upstreams.
  std::vector<std::shared_ptr<const Replica>> AllReplicas() const;

  // Unpinned traffic: the deployment index for this request. With every
  // traffic weight 0 the current version takes all.
  size_t ChooseDeployment(const ModelRoute& model) const;
  // ChooseDeployment's pick first, then the other deployments that carry
  // unpinned traffic (weight > 0), heaviest first: where an unpinned request
  // may fall back when its pick has no eligible replica. A deployment that
  // carries no traffic never receives unpinned requests.
  std::vector<size_t> DeploymentOrder(const ModelRoute& model) const;
  // Sets a model's traffic weights (version -> weight >= 0); versions left
  // out get 0. Error: unknown model or version, negative weight.
  Status SetTrafficWeights(std::string_view model, const std::map<std::string, double>& weights);
  // Weights and current version in one swap ("" keeps the current version).
  Status SetTraffic(std::string_view model, const std::map<std::string, double>& weights,
                    std::string_view current_version);
  std::map<std::string, double> TrafficWeights(std::string_view model) const;
  // The live current version (the config's until a rollout promotes another).
  std::string CurrentVersion(std::string_view model) const;

  // {"models": [{name, policy, current_version, deployments: [{version,
  // traffic_weight, replicas: [ids]}]}], "aliases": [...], "upstreams": [...]}
  nlohmann::json RoutingJson() const;

 private:
  GatewayConfig config_;
  std::vector<ModelRoute> models_;
  std::map<std::string, std::shared_ptr<const Replica>> upstreams_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<double>> traffic_;  // guarded by mu_: model -> per deployment
  std::map<std::string, std::string> current_;          // guarded by mu_: model -> current version
  mutable std::mt19937_64 rng_{0x9a90da};               // guarded by mu_
};

}  // namespace pagoda::gateway
