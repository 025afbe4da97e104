#include "tenancy/tenant_cache.h"

#include "tenancy/api_key.h"

namespace pagoda::tenancy {

TenantCache::TenantCache(TenantStore& store, TenantCacheOptions options) : store_(store), options_(std::move(options)) {}

Result<int64_t> TenantCache::Sync() {
  PAGODA_ASSIGN_OR_RETURN(int64_t gen, store_.Generation());
  std::lock_guard<std::mutex> lock(mu_);
  if (gen != generation_) {
    generation_ = gen;
    by_hash_.clear();
    by_id_.clear();
    rules_loaded_ = false;
    limits_.clear();
    reservations_.clear();
    ++stats_.reloads;
  }
  return gen;
}

Result<TenantCache::Entry> TenantCache::Lookup(std::unordered_map<std::string, Entry>& map,
                                               const std::string& lookup_key, int64_t gen,
                                               const std::function<Result<ApiKey>()>& load) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = map.find(lookup_key); it != map.end()) {
      ++stats_.hits;
      return it->second;
    }
    ++stats_.misses;
  }
  Entry entry;
  auto key = load();
  if (key.ok()) {
    auto tenant = store_.GetTenant(key->tenant_id);
    if (!tenant.ok()) return tenant.status();
    entry.found = true;
    entry.key = std::move(*key);
    entry.tenant = std::move(*tenant);
  } else if (key.status().code() != StatusCode::kNotFound) {
    return key.status();  // store trouble: fail closed
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Only when nothing changed since our generation read: a revocation that
  // raced this lookup must not be hidden by a stale entry.
  if (generation_ == gen) {
    if (map.size() >= options_.max_entries) map.clear();
    map.emplace(lookup_key, entry);
  }
  return entry;
}

Result<AuthContext> TenantCache::Admit(Entry entry, int64_t now_ms) {
  if (entry.key.revoked()) return NotFound("API key " + entry.key.id + " is revoked");
  if (entry.key.expired(now_ms)) return NotFound("API key " + entry.key.id + " has expired");
  if (entry.tenant.disabled) return NotFound("tenant " + entry.tenant.id + " is disabled");
  return AuthContext{std::move(entry.key), std::move(entry.tenant)};
}

Result<AuthContext> TenantCache::Authenticate(std::string_view credential, int64_t now_ms) {
  PAGODA_ASSIGN_OR_RETURN(std::string_view secret, ParseBearer(credential));
  const std::string hash = HashKey(secret, options_.pepper);
  PAGODA_ASSIGN_OR_RETURN(int64_t gen, Sync());
  PAGODA_ASSIGN_OR_RETURN(Entry entry, Lookup(by_hash_, hash, gen, [&] { return store_.FindKeyByHash(hash); }));
  if (!entry.found || !HashesEqual(entry.key.hash, hash)) return NotFound("invalid API key");
  return Admit(std::move(entry), now_ms);
}

Result<AuthContext> TenantCache::AuthenticateKeyId(std::string_view key_id, int64_t now_ms) {
  if (key_id.empty() || key_id.size() > 64) return NotFound("unknown API key id");
  const std::string id(key_id);
  PAGODA_ASSIGN_OR_RETURN(int64_t gen, Sync());
  PAGODA_ASSIGN_OR_RETURN(Entry entry, Lookup(by_id_, id, gen, [&] { return store_.GetKey(id); }));
  if (!entry.found || entry.key.id != id) return NotFound("unknown API key id");
  return Admit(std::move(entry), now_ms);
}

Status TenantCache::LoadRulesLocked() {
  if (rules_loaded_) return Status::Ok();
  PAGODA_ASSIGN_OR_RETURN(limits_, store_.ListLimits(""));
  PAGODA_ASSIGN_OR_RETURN(reservations_, store_.ListReservations());
  rules_loaded_ = true;
  return Status::Ok();
}

Result<std::vector<LimitRule>> TenantCache::LimitsFor(const AuthContext& auth, std::string_view model) {
  std::lock_guard<std::mutex> lock(mu_);
  PAGODA_RETURN_IF_ERROR(LoadRulesLocked());
  std::vector<LimitRule> out;
  auto add = [&](LimitScope scope, const std::string& id, std::string_view m) {
    for (const LimitRule& r : limits_) {
      if (r.scope == scope && r.scope_id == id && r.model == m) out.push_back(r);
    }
  };
  if (!model.empty()) add(LimitScope::kKey, auth.key.id, model);
  add(LimitScope::kKey, auth.key.id, "");
  if (!model.empty()) add(LimitScope::kTenant, auth.tenant.id, model);
  add(LimitScope::kTenant, auth.tenant.id, "");
  return out;
}

Result<std::optional<Reservation>> TenantCache::ReservationFor(std::string_view tenant_id, std::string_view model) {
  std::lock_guard<std::mutex> lock(mu_);
  PAGODA_RETURN_IF_ERROR(LoadRulesLocked());
  for (const Reservation& r : reservations_) {
    if (r.tenant_id == tenant_id && r.model == model) return std::optional<Reservation>(r);
  }
  return std::optional<Reservation>();
}

Result<std::vector<Reservation>> TenantCache::Reservations() {
  PAGODA_RETURN_IF_ERROR(Sync().status());
  std::lock_guard<std::mutex> lock(mu_);
  PAGODA_RETURN_IF_ERROR(LoadRulesLocked());
  return reservations_;
}

TenantCacheStats TenantCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace pagoda::tenancy
