#include "tenancy/key_admin.h"

#include "tenancy/api_key.h"

namespace pagoda::tenancy {

Result<IssuedKey> IssueKey(TenantStore& store, const KeyRequest& request, int64_t now_ms, const std::string& pepper) {
  PAGODA_ASSIGN_OR_RETURN(GeneratedKey g, GenerateKey());
  IssuedKey out;
  out.key.id = g.id;
  out.key.tenant_id = request.tenant_id;
  out.key.name = request.name;
  out.key.hash = HashKey(g.secret, pepper);
  out.key.models = request.models;
  out.key.created_at = now_ms;
  out.key.expires_at = request.expires_at;
  out.key.max_class = request.max_class;
  PAGODA_RETURN_IF_ERROR(store.InsertKey(out.key));
  out.secret = std::move(g.secret);
  return out;
}

Result<IssuedKey> RotateKey(TenantStore& store, const std::string& old_key_id, int64_t grace_ms, int64_t now_ms,
                            const std::string& pepper) {
  if (grace_ms < 0) return InvalidArgument("rotate: grace must be >= 0 ms");
  PAGODA_ASSIGN_OR_RETURN(ApiKey old, store.GetKey(old_key_id));
  if (old.revoked()) return FailedPrecondition("rotate: key " + old.id + " is already revoked");
  PAGODA_ASSIGN_OR_RETURN(GeneratedKey g, GenerateKey());
  IssuedKey out;
  out.key.id = g.id;
  out.key.tenant_id = old.tenant_id;
  out.key.name = old.name;
  out.key.hash = HashKey(g.secret, pepper);
  out.key.models = old.models;
  out.key.created_at = now_ms;
  out.key.expires_at = old.expires_at;
  out.key.max_class = old.max_class;
  PAGODA_RETURN_IF_ERROR(store.RotateKey(old.id, out.key, now_ms + grace_ms, now_ms));
  out.secret = std::move(g.secret);
  return out;
}

}  // namespace pagoda::tenancy
