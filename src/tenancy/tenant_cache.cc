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
    rules_loaded_ = false;
    limits_.clear();
    reservations_.clear();
    ++stats_.reloads;
  }
  return gen;
}

Result<AuthContext> TenantCache::Authenticate(std::string_view credential, int64_t now_ms) {
  PAGODA_ASSIGN_OR_RETURN(std::string_view secret, ParseBearer(credential));
  const std::string hash = HashKey(secret, options_.pepper);
  PAGODA_ASSIGN_OR_RETURN(int64_t gen, Sync());

  Entry entry;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = by_hash_.find(hash); it != by_hash_.end()) {
      entry = it->second;
      cached = true;
      ++stats_.hits;
    } else {
      ++stats_.misses;
    }
  }
  if (!cached) {
    auto key = store_.FindKeyByHash(hash);
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
      if (by_hash_.size() >= options_.max_entries) by_hash_.clear();
      by_hash_.emplace(hash, entry);
    }
  }
  if (!entry.found || !HashesEqual(entry.key.hash, hash)) return NotFound("invalid API key");
  if (entry.key.revoked()) return NotFound("API key " + entry.key.id + " is revoked");
  if (entry.key.expired(now_ms)) return NotFound("API key " + entry.key.id + " has expired");
  if (entry.tenant.disabled) return NotFound("tenant " + entry.tenant.id + " is disabled");
  return AuthContext{std::move(entry.key), std::move(entry.tenant)};
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

TenantCacheStats TenantCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace pagoda::tenancy
