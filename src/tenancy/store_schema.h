// The tenant store's schema as an ordered list of migrations, shared by the
// SQLite and PostgreSQL stores (DDL per dialect, DML identical). Applied at
// open inside one transaction and recorded in schema_migrations(version,
// applied_at). A database whose version is newer than the last migration here
// is refused (FailedPrecondition), never written.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "tenancy/sql_database.h"

namespace pagoda::tenancy {

struct Migration {
  int version = 0;
  const char* what = "";
  std::vector<std::string> sqlite;    // statements, in order
  std::vector<std::string> postgres;
};

const std::vector<Migration>& Migrations();
int LatestSchemaVersion();

// Brings `db` to LatestSchemaVersion() (PostgreSQL: under an advisory lock so
// that gateways starting together migrate once). Returns the version found
// before migrating.
Result<int> RunMigrations(SqlDatabase& db, int64_t now_ms);
// The version recorded in the database (0 when schema_migrations is absent).
Result<int> ReadSchemaVersion(SqlDatabase& db);

}  // namespace pagoda::tenancy
