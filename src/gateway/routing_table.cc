#include "gateway/routing_table.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "gateway/policy_factory.h"

namespace pagoda::gateway {

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

const Deployment* ModelRoute::FindDeployment(std::string_view version) const {
  for (const auto& d : deployments) {
    if (d.version == version) return &d;
  }
  return nullptr;
}

namespace {

// The previous table's live state for a replica that stays, else a fresh one.
std::shared_ptr<ReplicaState> StateFor(const RoutingTable* previous, const std::string& id, const std::string& url,
                                       const HealthOptions& health) {
  if (previous != nullptr) {
    for (const auto& r : previous->AllReplicas()) {
      if (r->id() == id && r->config().url == url) {
        r->state().set_options(health);
        return r->shared_state();
      }
    }
  }
  return std::make_shared<ReplicaState>(health);
}

// The model's tokenizer: the previous one while tokenizer_gguf names the same file.
Result<std::shared_ptr<const RequestTokenizer>> TokenizerFor(const ModelConfig& mc, const ModelRoute* old) {
  if (mc.tokenizer_gguf.empty()) return std::shared_ptr<const RequestTokenizer>();
  if (old != nullptr && old->tokenizer && old->config.tokenizer_gguf == mc.tokenizer_gguf) return old->tokenizer;
  auto t = RequestTokenizer::FromGguf(mc.tokenizer_gguf);
  if (!t.ok()) return InvalidArgument("model '" + mc.name + "': tokenizer_gguf: " + t.status().message());
  return std::shared_ptr<const RequestTokenizer>(std::move(t).value());
}

// Replicas of `old` that `now` no longer has (by id and URL): their cache
// view and learned entries go (a returning replica starts from its replay).
void ForgetLeftReplicas(const ModelRoute& old, const ModelRoute& now) {
  std::set<std::pair<std::string, std::string>> kept;
  for (const auto& d : now.deployments) {
    for (const auto& r : d.replicas) kept.emplace(r->id(), r->config().url);
  }
  for (const auto& d : old.deployments) {
    for (const auto& r : d.replicas) {
      if (kept.count({r->id(), r->config().url}) != 0) continue;
      now.kv_index->RemoveReplica(r->id());
      if (now.policy == old.policy) now.policy->RemoveReplica(r->id());
    }
  }
}

}  // namespace

Result<std::shared_ptr<RoutingTable>> RoutingTable::Build(const GatewayConfig& config, const RoutingTable* previous,
                                                          const EnvLookup& env) {
  auto t = std::make_shared<RoutingTable>();
  t->config_ = config;
  const HealthOptions health = HealthOptionsFrom(config);
  for (const ModelConfig& mc : config.models) {
    ModelRoute m;
    m.config = mc;
    const ModelRoute* old = previous != nullptr ? previous->FindModel(mc.name) : nullptr;
    m.kv_index = old != nullptr ? old->kv_index : std::make_shared<KvIndex>();
    auto tokenizer = TokenizerFor(mc, old);
    if (!tokenizer.ok()) return tokenizer.status();
    m.tokenizer = std::move(tokenizer).value();
    if (old != nullptr && old->config.policy == mc.policy) {
      m.policy = old->policy;
    } else {
      auto p = MakePolicy(mc.policy, mc, m.kv_index);
      if (!p.ok()) return p.status();
      m.policy = std::shared_ptr<RoutingPolicy>(std::move(p).value());
    }
    std::vector<double> weights;
    for (const DeploymentConfig& dc : mc.deployments) {
      Deployment d;
      d.version = dc.version;
      d.key = mc.name + "@" + dc.version;
      for (const ReplicaConfig& rc : dc.replicas) {
        d.replicas.push_back(std::make_shared<const Replica>(rc, mc.name, dc.version,
                                                             StateFor(previous, rc.id, rc.url, health)));
      }
      m.deployments.push_back(std::move(d));
      weights.push_back(dc.traffic_weight);
    }
    t->traffic_[mc.name] = std::move(weights);
    t->current_[mc.name] = mc.current_version;
    t->models_.push_back(std::move(m));
  }
  for (const UpstreamConfig& uc : config.upstreams) {
    ExternalInfo ext;
    ext.upstream = uc.name;
    ext.model = uc.model;
    if (!uc.api_key_env.empty()) {
      auto key = env(uc.api_key_env);
      if (!key || key->empty()) {
        return InvalidArgument("upstream '" + uc.name + "': environment variable " + uc.api_key_env +
                               " (api_key_env) is not set");
      }
      ext.api_key = *key;
    }
    ReplicaConfig rc;
    rc.id = "upstream:" + uc.name;
    rc.url = uc.url;
    rc.endpoint = uc.endpoint;
    rc.ca_file = uc.ca_file;
    auto state = StateFor(previous, rc.id, rc.url, health);
    t->upstreams_[uc.name] = std::make_shared<const Replica>(std::move(rc), std::move(ext), std::move(state));
  }
  // Only once the table is sure to be installed: a refused reload changes nothing.
  for (const ModelRoute& m : t->models_) {
    const ModelRoute* old = previous != nullptr ? previous->FindModel(m.config.name) : nullptr;
    if (old != nullptr) ForgetLeftReplicas(*old, m);
  }
  return t;
}

const ModelRoute* RoutingTable::FindModel(std::string_view name) const {
  for (const auto& m : models_) {
    if (m.config.name == name) return &m;
  }
  return nullptr;
}

const AliasConfig* RoutingTable::FindAlias(std::string_view name) const {
  for (const auto& a : config_.aliases) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::shared_ptr<const Replica> RoutingTable::FindUpstream(std::string_view name) const {
  const auto it = upstreams_.find(std::string(name));
  return it == upstreams_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const Replica>> RoutingTable::AllReplicas() const {
  std::vector<std::shared_ptr<const Replica>> out;
  for (const auto& m : models_) {
    for (const auto& d : m.deployments) out.insert(out.end(), d.replicas.begin(), d.replicas.end());
  }
  for (const auto& [name, r] : upstreams_) out.push_back(r);
  return out;
}

size_t RoutingTable::ChooseDeployment(const ModelRoute& model) const { return DeploymentOrder(model).front(); }

std::vector<size_t> RoutingTable::DeploymentOrder(const ModelRoute& model) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<double>& w = traffic_.at(model.config.name);
  double total = 0;
  for (double x : w) total += x;
  if (total <= 0) {
    const std::string& current = current_.at(model.config.name);
    for (size_t i = 0; i < model.deployments.size(); ++i) {
      if (model.deployments[i].version == current) return {i};
    }
    return {0};
  }
  size_t chosen = w.size() - 1;
  double x = std::uniform_real_distribution<double>(0, total)(rng_);
  for (size_t i = 0; i < w.size(); ++i) {
    if (x < w[i]) {
      chosen = i;
      break;
    }
    x -= w[i];
  }
  std::vector<size_t> order = {chosen};
  for (size_t i = 0; i < w.size(); ++i) {
    if (i != chosen && w[i] > 0) order.push_back(i);
  }
  std::stable_sort(order.begin() + 1, order.end(), [&](size_t a, size_t b) { return w[a] > w[b]; });
  return order;
}

Status RoutingTable::SetTrafficWeights(std::string_view model, const std::map<std::string, double>& weights) {
  return SetTraffic(model, weights, "");
}

Status RoutingTable::SetTraffic(std::string_view model, const std::map<std::string, double>& weights,
                                std::string_view current_version) {
  const ModelRoute* m = FindModel(model);
  if (m == nullptr) return NotFound("unknown model '" + std::string(model) + "'");
  if (!current_version.empty() && m->FindDeployment(current_version) == nullptr) {
    return NotFound("model '" + std::string(model) + "' has no version '" + std::string(current_version) + "'");
  }
  std::vector<double> w(m->deployments.size(), 0.0);
  for (const auto& [version, weight] : weights) {
    bool found = false;
    for (size_t i = 0; i < m->deployments.size(); ++i) {
      if (m->deployments[i].version == version) {
        w[i] = weight;
        found = true;
      }
    }
    if (!found) return NotFound("model '" + std::string(model) + "' has no version '" + version + "'");
    if (!(weight >= 0)) return InvalidArgument("traffic weight must be >= 0");
  }
  std::lock_guard<std::mutex> lock(mu_);
  traffic_[std::string(model)] = std::move(w);
  if (!current_version.empty()) current_[std::string(model)] = std::string(current_version);
  return Status::Ok();
}

std::string RoutingTable::CurrentVersion(std::string_view model) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = current_.find(std::string(model));
  return it == current_.end() ? "" : it->second;
}

std::map<std::string, double> RoutingTable::TrafficWeights(std::string_view model) const {
  std::map<std::string, double> out;
  const ModelRoute* m = FindModel(model);
  if (m == nullptr) return out;
  std::lock_guard<std::mutex> lock(mu_);
  const auto& w = traffic_.at(std::string(model));
  for (size_t i = 0; i < m->deployments.size(); ++i) out[m->deployments[i].version] = w[i];
  return out;
}

nlohmann::json RoutingTable::RoutingJson() const {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : models_) {
    nlohmann::json deps = nlohmann::json::array();
    const auto weights = TrafficWeights(m.config.name);
    for (const auto& d : m.deployments) {
      nlohmann::json ids = nlohmann::json::array();
      for (const auto& r : d.replicas) ids.push_back(r->id());
      deps.push_back({{"version", d.version}, {"traffic_weight", weights.at(d.version)}, {"replicas", ids}});
    }
    models.push_back({{"name", m.config.name},
                      {"policy", m.config.policy},
                      {"current_version", CurrentVersion(m.config.name)},
                      {"deployments", deps}});
  }
  nlohmann::json aliases = nlohmann::json::array();
  for (const auto& a : config_.aliases) {
    aliases.push_back({{"name", a.name},
                       {"model", a.version.empty() ? a.model : a.model + "@" + a.version},
                       {"self_hosted_only", a.self_hosted_only},
                       {"fallback", a.fallback.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.fallback)}});
  }
  nlohmann::json upstreams = nlohmann::json::array();
  for (const auto& u : config_.upstreams) {
    // Never the key itself: only the variable's name.
    upstreams.push_back({{"name", u.name}, {"url", u.url}, {"api_key_env", u.api_key_env}, {"model", u.model}});
  }
  return {{"models", models}, {"aliases", aliases}, {"upstreams", upstreams}, {"zone", config_.zone}};
}

}  // namespace pagoda::gateway
