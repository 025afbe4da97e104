// The embedded default store: one SQLite file (`--db PATH`) in WAL mode with
// synchronous=NORMAL (a committed transaction survives kill -9 of the
// process; only an OS crash or power loss can drop the last commits),
// foreign keys on and a busy timeout for the lock other processes may hold.
// Several processes may open the same file (two gateways on one machine).
//
// Threads: one writer connection behind a mutex (writes of this process queue
// here instead of spinning on SQLite's busy handler) and a small pool of
// reader connections; prepared statements are cached per connection.
//
// Bad files become clear errors naming the path: missing directory (IoError),
// not a database / corrupt (DataLoss), read-only file or directory
// (FailedPrecondition; open with StoreOptions::read_only to read it), locked
// by another process past busy_timeout_ms (IoError), schema newer than this
// build (FailedPrecondition).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tenancy/sql_database.h"
#include "tenancy/tenant_store.h"

namespace pagoda::tenancy {

// Opens (creating when absent, unless read_only) and migrates.
Result<std::unique_ptr<TenantStore>> OpenSqliteTenantStore(const std::string& path, const StoreOptions& options = {});

// The raw database, for the store and for tests that inspect the schema.
Result<std::unique_ptr<SqlDatabase>> OpenSqliteDatabase(const std::string& path, const StoreOptions& options = {});

}  // namespace pagoda::tenancy
