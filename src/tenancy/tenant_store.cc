#include "tenancy/tenant_store.h"

#include <chrono>

#include "tenancy/postgres_tenant_store.h"
#include "tenancy/sqlite_tenant_store.h"
#include "tenancy/store_schema.h"

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

Result<std::unique_ptr<SqlDatabase>> OpenStoreDatabase(const std::string& url, const StoreOptions& options) {
  auto starts = [&](std::string_view p) { return url.rfind(p, 0) == 0; };
  Result<std::unique_ptr<SqlDatabase>> db = InvalidArgument(
      "store: unknown URL scheme (expected sqlite:PATH, a path, or postgresql://...)");
  if (starts("postgresql://") || starts("postgres://")) {
    db = OpenPostgresDatabase(url, options);
  } else if (starts("sqlite://")) {
    db = OpenSqliteDatabase(url.substr(9), options);
  } else if (starts("sqlite:")) {
    db = OpenSqliteDatabase(url.substr(7), options);
  } else if (url.find("://") == std::string::npos) {
    db = OpenSqliteDatabase(url, options);
  }
  if (!db.ok()) return db.status();
  if (auto m = RunMigrations(**db, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count()); !m.ok()) return m.status().WithContext((*db)->Describe() + ": open");
  return db;
}

}  // namespace pagoda::tenancy
