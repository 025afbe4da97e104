#include "tenancy/store_schema.h"

namespace pagoda::tenancy {
namespace {

// Types differ per dialect: REAL vs DOUBLE PRECISION, SQLite's rowid alias vs
// BIGSERIAL. Booleans are INTEGER 0/1 in both so queries stay identical.
std::vector<std::string> V1(bool pg) {
  const std::string real = pg ? "DOUBLE PRECISION" : "REAL";
  const std::string rowid = pg ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY";
  return {
      "CREATE TABLE tenants (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', plan TEXT NOT NULL, "
      "weight " + real + " NOT NULL DEFAULT 1, share_cache_across_keys INTEGER NOT NULL DEFAULT 0, "
      "dedicated_deployment TEXT NOT NULL DEFAULT '', disabled INTEGER NOT NULL DEFAULT 0, "
      "created_at BIGINT NOT NULL)",
      "CREATE TABLE api_keys (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL REFERENCES tenants(id), "
      "name TEXT NOT NULL DEFAULT '', hash TEXT NOT NULL UNIQUE, models TEXT NOT NULL DEFAULT '[]', "
      "created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL DEFAULT 0, revoked_at BIGINT NOT NULL DEFAULT 0)",
      "CREATE INDEX api_keys_tenant ON api_keys (tenant_id)",
      "CREATE TABLE prices (model TEXT PRIMARY KEY, input_per_mtok " + real + " NOT NULL DEFAULT 0, "
      "cached_input_per_mtok " + real + " NOT NULL DEFAULT 0, output_per_mtok " + real + " NOT NULL DEFAULT 0, "
      "replica_hour " + real + " NOT NULL DEFAULT 0)",
      "CREATE TABLE usage_records (id " + rowid + ", request_id TEXT NOT NULL UNIQUE, "
      "tenant_id TEXT NOT NULL, key_id TEXT NOT NULL, model TEXT NOT NULL, deployment TEXT NOT NULL, "
      "version TEXT NOT NULL, prompt_tokens BIGINT NOT NULL, cached_tokens BIGINT NOT NULL, "
      "completion_tokens BIGINT NOT NULL, queue_ms BIGINT NOT NULL, ttft_ms BIGINT NOT NULL, "
      "total_ms BIGINT NOT NULL, status TEXT NOT NULL, http_status INTEGER NOT NULL, "
      "started_at_ms BIGINT NOT NULL)",
      "CREATE INDEX usage_records_time ON usage_records (started_at_ms)",
      "CREATE INDEX usage_records_tenant_time ON usage_records (tenant_id, started_at_ms)",
      "CREATE TABLE store_generation (id INTEGER PRIMARY KEY CHECK (id = 1), generation BIGINT NOT NULL)",
      "INSERT INTO store_generation (id, generation) VALUES (1, 0)",
  };
}

std::vector<std::string> V2(bool pg) {
  const std::string real = pg ? "DOUBLE PRECISION" : "REAL";
  return {
      "CREATE TABLE limits (scope TEXT NOT NULL, scope_id TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', "
      "rpm BIGINT NOT NULL DEFAULT 0, tpm BIGINT NOT NULL DEFAULT 0, concurrent BIGINT NOT NULL DEFAULT 0, "
      "PRIMARY KEY (scope, scope_id, model))",
      "CREATE TABLE reservations (tenant_id TEXT NOT NULL REFERENCES tenants(id), model TEXT NOT NULL, "
      "tokens_per_second " + real + " NOT NULL, PRIMARY KEY (tenant_id, model))",
      "CREATE TABLE replica_hours (tenant_id TEXT NOT NULL, deployment TEXT NOT NULL, model TEXT NOT NULL, "
      "day_ms BIGINT NOT NULL, hours " + real + " NOT NULL, PRIMARY KEY (tenant_id, deployment, model, day_ms))",
  };
}

// The Batch and Files APIs (src/batch): file metadata (contents live in the
// data directory), batches, and one row per input line, committed once. No
// text: a line row says where its request is in the input file and where its
// answer is in the batch's results file, both in the data directory.
std::vector<std::string> V3(bool pg) {
  (void)pg;
  return {
      "CREATE TABLE batch_files (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, purpose TEXT NOT NULL, "
      "filename TEXT NOT NULL, bytes BIGINT NOT NULL, lines BIGINT NOT NULL DEFAULT 0, "
      "created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL DEFAULT 0, deleted_at BIGINT NOT NULL DEFAULT 0)",
      "CREATE INDEX batch_files_tenant ON batch_files (tenant_id, created_at)",
      "CREATE TABLE batches (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, key_id TEXT NOT NULL, "
      "endpoint TEXT NOT NULL, input_file_id TEXT NOT NULL, completion_window TEXT NOT NULL, "
      "status TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT 'null', errors TEXT NOT NULL DEFAULT 'null', "
      "output_file_id TEXT NOT NULL DEFAULT '', error_file_id TEXT NOT NULL DEFAULT '', "
      "total BIGINT NOT NULL DEFAULT 0, completed BIGINT NOT NULL DEFAULT 0, failed BIGINT NOT NULL DEFAULT 0, "
      "created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, in_progress_at BIGINT NOT NULL DEFAULT 0, "
      "finalizing_at BIGINT NOT NULL DEFAULT 0, completed_at BIGINT NOT NULL DEFAULT 0, "
      "failed_at BIGINT NOT NULL DEFAULT 0, expired_at BIGINT NOT NULL DEFAULT 0, "
      "cancelling_at BIGINT NOT NULL DEFAULT 0, cancelled_at BIGINT NOT NULL DEFAULT 0)",
      "CREATE INDEX batches_tenant ON batches (tenant_id, created_at)",
      "CREATE INDEX batches_status ON batches (status)",
      "CREATE TABLE batch_lines (batch_id TEXT NOT NULL, line_no BIGINT NOT NULL, custom_id TEXT NOT NULL, "
      "state TEXT NOT NULL, offset_bytes BIGINT NOT NULL DEFAULT 0, length_bytes BIGINT NOT NULL DEFAULT 0, "
      "status_code INTEGER NOT NULL DEFAULT 0, result_offset BIGINT NOT NULL DEFAULT -1, "
      "result_length BIGINT NOT NULL DEFAULT 0, request_id TEXT NOT NULL DEFAULT '', "
      "PRIMARY KEY (batch_id, line_no))",
      "CREATE INDEX batch_lines_state ON batch_lines (batch_id, state)",
  };
}

// Workload classes (base/workload_class.h) and batch pricing: the classes a
// tenant and a key may use ('' = the plan's / the tenant's), the class each
// usage record ran at, and the price multiplier for batch-class tokens.
std::vector<std::string> V4(bool pg) {
  const std::string real = pg ? "DOUBLE PRECISION" : "REAL";
  return {
      "ALTER TABLE tenants ADD COLUMN max_class TEXT NOT NULL DEFAULT ''",
      "ALTER TABLE tenants ADD COLUMN default_class TEXT NOT NULL DEFAULT 'interactive'",
      "ALTER TABLE api_keys ADD COLUMN max_class TEXT NOT NULL DEFAULT ''",
      "ALTER TABLE prices ADD COLUMN batch_factor " + real + " NOT NULL DEFAULT 1",
      "ALTER TABLE usage_records ADD COLUMN service_tier TEXT NOT NULL DEFAULT 'interactive'",
  };
}

std::vector<Migration> Build() {
  return {
      {1, "tenants, api keys, prices, usage records, generation", V1(false), V1(true)},
      {2, "limits, reservations, replica-hours", V2(false), V2(true)},
      {3, "batch files, batches, batch lines", V3(false), V3(true)},
      {4, "workload classes, usage service tier, batch price factor", V4(false), V4(true)},
  };
}

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> migrations = Build();
  return migrations;
}

int LatestSchemaVersion() { return Migrations().back().version; }

Result<int> ReadSchemaVersion(SqlDatabase& db) {
  const std::string probe = db.dialect() == SqlDialect::kSqlite
                                ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
                                : "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
                                  "current_schema() AND table_name = 'schema_migrations'";
  PAGODA_ASSIGN_OR_RETURN(auto rows, db.Query(probe));
  if (rows.empty() || SqlInt(rows[0][0]) == 0) return 0;
  PAGODA_ASSIGN_OR_RETURN(rows, db.Query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
  return static_cast<int>(SqlInt(rows[0][0]));
}

Result<int> RunMigrations(SqlDatabase& db, int64_t now_ms) {
  int found = 0;
  const bool pg = db.dialect() == SqlDialect::kPostgres;
  Status st = db.Transact(true, [&](SqlConnection& c) -> Status {
    // Gateways starting together: the first migrates, the others wait here
    // and then find nothing to do. (SQLite: BEGIN IMMEDIATE already serializes.)
    if (pg) PAGODA_RETURN_IF_ERROR(c.Exec("SELECT pg_advisory_xact_lock(7262001)").status());
    PAGODA_RETURN_IF_ERROR(c.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                                  "applied_at BIGINT NOT NULL)")
                               .status());
    PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
    found = static_cast<int>(SqlInt(rows[0][0]));
    if (found > LatestSchemaVersion()) {
      return FailedPrecondition("schema version " + std::to_string(found) + " is newer than this pagoda knows (" +
                                std::to_string(LatestSchemaVersion()) +
                                "); upgrade pagoda or open a database it created");
    }
    for (const Migration& m : Migrations()) {
      if (m.version <= found) continue;
      for (const std::string& sql : pg ? m.postgres : m.sqlite) {
        Status s = c.Exec(sql).status();
        if (!s.ok()) return s.WithContext("migration " + std::to_string(m.version));
      }
      const SqlValue params[] = {int64_t{m.version}, now_ms};
      PAGODA_RETURN_IF_ERROR(c.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", params).status());
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return found;
}

}  // namespace pagoda::tenancy
