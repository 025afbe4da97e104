// SqlDatabase: the little a tenant store needs from a SQL engine, so that the
// SQLite and PostgreSQL stores share one schema, one set of queries and one
// behaviour (sql_tenant_store.h). Statements use `?` placeholders; the
// PostgreSQL side rewrites them to $1..$n. Internal to the tenancy layer.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"

namespace pagoda::tenancy {

// SQLite returns typed values; PostgreSQL returns text. The accessors below
// read either.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;
using SqlRow = std::vector<SqlValue>;

int64_t SqlInt(const SqlValue& v);
double SqlReal(const SqlValue& v);
std::string SqlText(const SqlValue& v);

enum class SqlDialect { kSqlite, kPostgres };

// One connection, used by one thread at a time (inside Transact).
class SqlConnection {
 public:
  virtual ~SqlConnection() = default;
  // Runs one statement; the rows it returned.
  virtual Result<std::vector<SqlRow>> Exec(const std::string& sql, std::span<const SqlValue> params = {}) = 0;
};

class SqlDatabase {
 public:
  virtual ~SqlDatabase() = default;
  virtual SqlDialect dialect() const = 0;
  virtual const std::string& Describe() const = 0;
  // Runs `fn` in one transaction: committed when it returns OK, rolled back
  // otherwise. `write` transactions take the write lock up front (SQLite
  // BEGIN IMMEDIATE) so they never fail half-way on a lock upgrade.
  virtual Status Transact(bool write, const std::function<Status(SqlConnection&)>& fn) = 0;
  // One read statement outside an explicit transaction (the per-request path).
  virtual Result<std::vector<SqlRow>> Query(const std::string& sql, std::span<const SqlValue> params = {}) = 0;
};

}  // namespace pagoda::tenancy
