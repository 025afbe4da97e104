#include "tenancy/tenant_store.h"

#include "tenancy/postgres_tenant_store.h"
#include "tenancy/sqlite_tenant_store.h"

namespace pagoda::tenancy {

Result<std::unique_ptr<TenantStore>> OpenTenantStore(const std::string& url, const StoreOptions& options) {
  auto starts = [&](std::string_view p) { return url.rfind(p, 0) == 0; };
  if (starts("postgresql://") || starts("postgres://")) return OpenPostgresTenantStore(url, options);
  if (starts("sqlite://")) return OpenSqliteTenantStore(url.substr(9), options);  // sqlite:///abs -> /abs
  if (starts("sqlite:")) return OpenSqliteTenantStore(url.substr(7), options);
  if (url.find("://") != std::string::npos) {
    return InvalidArgument("tenant store: unknown URL scheme (expected sqlite:PATH, a path, or postgresql://...)");
  }
  return OpenSqliteTenantStore(url, options);
}

}  // namespace pagoda::tenancy
