// TenantCache: the per-request control-plane path (auth, then limits and
// reservations for the request's model). Each Authenticate reads the store's
// Generation() (one single-row read) and serves keys, tenants, limits and
// reservations from memory while it is unchanged; any admin change (revoke,
// disable, new limit) bumps the generation, so every process sees it on its
// next request. Store errors fail closed: the request is refused, never
// admitted unmetered.
//
// Thread-safe: any thread may call any method.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tenancy/records.h"
#include "tenancy/tenant_store.h"

namespace pagoda::tenancy {

struct AuthContext {
  ApiKey key;
  Tenant tenant;
};

struct TenantCacheOptions {
  std::string pepper;           // HMAC pepper for HashKey ("" = plain SHA-256)
  size_t max_entries = 100000;  // cached key hashes (found or not) before a reset
};

struct TenantCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;    // went to the store for a key
  int64_t reloads = 0;   // generation changed
};

class TenantCache {
 public:
  explicit TenantCache(TenantStore& store, TenantCacheOptions options = {});

  // `credential`: an Authorization header value ("Bearer pgd-...") or a bare
  // key. Errors (the server maps them):
  //   InvalidArgument  malformed key (empty, oversized, non-printable)  -> 401
  //   NotFound         unknown, revoked or expired key; disabled tenant -> 401
  //   IoError / FailedPrecondition / DataLoss  store unusable           -> 503
  // Messages name the key id at most, never the secret.
  Result<AuthContext> Authenticate(std::string_view credential, int64_t now_ms);

  // The same checks for a key named by its public id, for callers that are
  // already trusted to act as that key (the server's internal principal; see
  // ControlPlane::InternalToken). NotFound for an unknown id too.
  Result<AuthContext> AuthenticateKeyId(std::string_view key_id, int64_t now_ms);

  // Rules that apply to a request of `auth` on `model`, most specific first:
  // key+model, key+any, tenant+model, tenant+any (absent ones left out).
  // From the snapshot of the last Authenticate's generation.
  Result<std::vector<LimitRule>> LimitsFor(const AuthContext& auth, std::string_view model);
  Result<std::optional<Reservation>> ReservationFor(std::string_view tenant_id, std::string_view model);
  // Every reservation as of the store's current generation: one single-row
  // read, and the list itself only when the generation moved (the SLA
  // figures ask before each snapshot).
  Result<std::vector<Reservation>> Reservations();

  TenantCacheStats stats() const;

 private:
  struct Entry {
    bool found = false;
    ApiKey key;
    Tenant tenant;
  };
  // Reads the generation; drops everything when it moved. Returns it.
  Result<int64_t> Sync();
  // `entry` from the map `map` under `lookup_key`, or loaded with `load`
  // (the key) and the key's tenant, then cached while `gen` is current.
  Result<Entry> Lookup(std::unordered_map<std::string, Entry>& map, const std::string& lookup_key, int64_t gen,
                       const std::function<Result<ApiKey>()>& load);
  // Revoked, expired, disabled tenant -> NotFound.
  static Result<AuthContext> Admit(Entry entry, int64_t now_ms);
  Status LoadRulesLocked();

  TenantStore& store_;
  const TenantCacheOptions options_;
  mutable std::mutex mu_;
  int64_t generation_ = -1;
  std::unordered_map<std::string, Entry> by_hash_;
  std::unordered_map<std::string, Entry> by_id_;
  bool rules_loaded_ = false;
  std::vector<LimitRule> limits_;
  std::vector<Reservation> reservations_;
  TenantCacheStats stats_;
};

}  // namespace pagoda::tenancy
