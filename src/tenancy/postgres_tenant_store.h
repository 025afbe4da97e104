// The shared store for several gateway processes: PostgreSQL through libpqxx
// 6.4, same schema, migrations and queries as the SQLite store
// (sql_tenant_store.h). A small pool of connections (StoreOptions::pool_size)
// serves concurrent threads. A connection that breaks is thrown away and the
// statement is retried once on a fresh one, so the first call after the server
// comes back succeeds; while the server is down calls fail with IoError
// ("postgresql://host:port/db: FindKeyByHash: server unreachable: ...").
// A COMMIT whose outcome is unknown (the link broke during it) is reported as
// IoError too; the usage ledger's retries are idempotent by request id.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tenancy/sql_database.h"
#include "tenancy/tenant_store.h"

namespace pagoda::tenancy {

// `url`: a libpq URI ("postgresql://user@host:port/db?..."). Connects once (so
// a wrong URL fails now) and migrates.
Result<std::unique_ptr<TenantStore>> OpenPostgresTenantStore(const std::string& url,
                                                            const StoreOptions& options = {});

Result<std::unique_ptr<SqlDatabase>> OpenPostgresDatabase(const std::string& url, const StoreOptions& options = {});

// The URL without its password ("postgresql://user@host:5432/db").
std::string RedactPostgresUrl(const std::string& url);

}  // namespace pagoda::tenancy
