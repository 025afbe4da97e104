// Issuing and rotating API keys: generate the secret, store only its hash,
// hand the secret back once. Used by the admin API and the CLI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tenancy/records.h"
#include "tenancy/tenant_store.h"

namespace pagoda::tenancy {

struct KeyRequest {
  std::string tenant_id;
  std::string name;
  std::vector<std::string> models;  // empty = every model
  int64_t expires_at = 0;           // 0 = never
  std::optional<WorkloadClass> max_class = std::nullopt;  // nullopt = the tenant's
};

struct IssuedKey {
  std::string secret;  // show once; never store or log
  ApiKey key;          // what the store holds (hash, no secret)
};

// `pepper` must be the one the TenantCache uses.
Result<IssuedKey> IssueKey(TenantStore& store, const KeyRequest& request, int64_t now_ms,
                           const std::string& pepper = {});

// A new key with the old one's tenant, name, scope, expiry and max class; the old key is
// revoked now (grace_ms == 0) or stops working at now + grace_ms. One
// transaction.
Result<IssuedKey> RotateKey(TenantStore& store, const std::string& old_key_id, int64_t grace_ms, int64_t now_ms,
                            const std::string& pepper = {});

}  // namespace pagoda::tenancy
