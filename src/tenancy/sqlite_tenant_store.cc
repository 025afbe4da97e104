#include "tenancy/sqlite_tenant_store.h"

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "tenancy/sql_tenant_store.h"
#include "tenancy/store_schema.h"

namespace pagoda::tenancy {
namespace {

namespace fs = std::filesystem;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// SQLite's result codes as the store's error kinds. Messages carry SQLite's
// text (never parameter values: SQLite does not echo them).
Status SqliteStatus(int rc, sqlite3* db, int busy_timeout_ms) {
  const std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return IoError("database is locked by another connection or process (waited " +
                     std::to_string(busy_timeout_ms) + " ms): " + msg);
    case SQLITE_NOTADB:
      return DataLoss("the file is not a SQLite database (corrupt, or another kind of file): " + msg);
    case SQLITE_CORRUPT:
      return DataLoss("the database file is corrupt: " + msg);
    case SQLITE_READONLY:
      return FailedPrecondition("the database is read-only (no write permission on the file or its directory): " +
                                msg);
    case SQLITE_CANTOPEN:
      return IoError("cannot open the database file (missing directory or no permission): " + msg);
    case SQLITE_CONSTRAINT:
      return InvalidArgument("constraint failed: " + msg);
    case SQLITE_FULL:
      return ResourceExhausted("the disk is full: " + msg);
    case SQLITE_IOERR:
      return IoError("I/O error: " + msg);
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return FailedPrecondition("permission denied: " + msg);
    default:
      return Internal("sqlite error " + std::to_string(rc) + ": " + msg);
  }
}

class SqliteConnection final : public SqlConnection {
 public:
  SqliteConnection(sqlite3* db, int busy_timeout_ms) : db_(db), busy_timeout_ms_(busy_timeout_ms) {}
  ~SqliteConnection() override {
    for (auto& [sql, stmt] : stmts_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
  }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  static Result<std::unique_ptr<SqliteConnection>> Open(const std::string& path, bool read_only, int busy_ms) {
    sqlite3* db = nullptr;
    const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                      SQLITE_OPEN_NOMUTEX;  // one thread at a time per connection (the pool)
    const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
    auto conn = std::make_unique<SqliteConnection>(db, busy_ms);  // closes db on every path
    if (rc != SQLITE_OK) return SqliteStatus(rc, db, busy_ms);
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, busy_ms);
    if (!read_only && sqlite3_db_readonly(db, "main") == 1) {
      return FailedPrecondition(
          "the database file is read-only (no write permission on it); "
          "open it with read_only for reports, or fix its permissions");
    }
    // WAL: readers never block the writer; synchronous=NORMAL: a commit is in
    // the WAL before COMMIT returns, so it survives kill -9 of this process.
    if (!read_only) {
      PAGODA_ASSIGN_OR_RETURN(auto rows, conn->Exec("PRAGMA journal_mode=WAL", {}));
      if (rows.empty() || SqlText(rows[0][0]) != "wal") {
        return FailedPrecondition("could not switch the database to WAL mode (journal_mode is " +
                                  (rows.empty() ? std::string("unknown") : SqlText(rows[0][0])) + ")");
      }
    } else {
      // A read-only open still reads the header: corrupt files fail here.
      PAGODA_RETURN_IF_ERROR(conn->Exec("SELECT COUNT(*) FROM sqlite_master", {}).status());
    }
    PAGODA_RETURN_IF_ERROR(conn->Exec("PRAGMA synchronous=NORMAL", {}).status());
    PAGODA_RETURN_IF_ERROR(conn->Exec("PRAGMA foreign_keys=ON", {}).status());
    return conn;
  }

  Result<std::vector<SqlRow>> Exec(const std::string& sql, std::span<const SqlValue> params) override {
    sqlite3_stmt* stmt = nullptr;
    if (auto it = stmts_.find(sql); it != stmts_.end()) {
      stmt = it->second;
    } else {
      const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                        &stmt, nullptr);
      if (rc != SQLITE_OK) return SqliteStatus(rc, db_, busy_timeout_ms_);
      stmts_.emplace(sql, stmt);
    }
    struct Reset {
      sqlite3_stmt* s;
      ~Reset() {
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
      }
    } reset{stmt};
    for (size_t i = 0; i < params.size(); ++i) {
      const int idx = static_cast<int>(i + 1);
      int rc = SQLITE_OK;
      if (const auto* v = std::get_if<int64_t>(&params[i])) {
        rc = sqlite3_bind_int64(stmt, idx, *v);
      } else if (const auto* d = std::get_if<double>(&params[i])) {
        rc = sqlite3_bind_double(stmt, idx, *d);
      } else if (const auto* s = std::get_if<std::string>(&params[i])) {
        rc = sqlite3_bind_text(stmt, idx, s->data(), static_cast<int>(s->size()), SQLITE_STATIC);
      } else {
        rc = sqlite3_bind_null(stmt, idx);
      }
      if (rc != SQLITE_OK) return SqliteStatus(rc, db_, busy_timeout_ms_);
    }
    std::vector<SqlRow> rows;
    for (;;) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqliteStatus(rc, db_, busy_timeout_ms_);
      const int n = sqlite3_column_count(stmt);
      SqlRow row(n);
      for (int c = 0; c < n; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER: row[c] = static_cast<int64_t>(sqlite3_column_int64(stmt, c)); break;
          case SQLITE_FLOAT: row[c] = sqlite3_column_double(stmt, c); break;
          case SQLITE_NULL: break;
          default: {
            const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            row[c] = std::string(p ? p : "", sqlite3_column_bytes(stmt, c));
          }
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  Status Run(const char* sql) { return Exec(sql, {}).status(); }

 private:
  sqlite3* db_;
  int busy_timeout_ms_;
  std::unordered_map<std::string, sqlite3_stmt*> stmts_;
};

class SqliteDatabase final : public SqlDatabase {
 public:
  SqliteDatabase(std::string path, StoreOptions options)
      : path_(std::move(path)), describe_("sqlite:" + path_), options_(options) {}

  Status Init() {
    if (!options_.read_only) {
      PAGODA_ASSIGN_OR_RETURN(writer_, SqliteConnection::Open(path_, false, options_.busy_timeout_ms));
    }
    // One reader up front so that open-time problems show now, not on the
    // first request.
    PAGODA_ASSIGN_OR_RETURN(auto reader, SqliteConnection::Open(path_, options_.read_only, options_.busy_timeout_ms));
    idle_.push_back(std::move(reader));
    readers_ = 1;
    return Status::Ok();
  }

  SqlDialect dialect() const override { return SqlDialect::kSqlite; }
  const std::string& Describe() const override { return describe_; }

  Status Transact(bool write, const std::function<Status(SqlConnection&)>& fn) override {
    if (write) {
      if (!writer_) return FailedPrecondition("the store was opened read-only");
      std::lock_guard<std::mutex> lock(write_mu_);
      return RunTransaction(*writer_, "BEGIN IMMEDIATE", fn);
    }
    PAGODA_ASSIGN_OR_RETURN(Lease lease, AcquireReader());
    return RunTransaction(*lease.conn, "BEGIN", fn);
  }

  Result<std::vector<SqlRow>> Query(const std::string& sql, std::span<const SqlValue> params) override {
    PAGODA_ASSIGN_OR_RETURN(Lease lease, AcquireReader());
    return lease.conn->Exec(sql, params);
  }

 private:
  struct Lease {
    SqliteDatabase* db = nullptr;
    std::unique_ptr<SqliteConnection> conn;
    Lease(SqliteDatabase* d, std::unique_ptr<SqliteConnection> c) : db(d), conn(std::move(c)) {}
    Lease(Lease&& o) noexcept : db(o.db), conn(std::move(o.conn)) {}
    ~Lease() {
      if (conn) db->Release(std::move(conn));
    }
  };

  static Status RunTransaction(SqliteConnection& c, const char* begin,
                               const std::function<Status(SqlConnection&)>& fn) {
    PAGODA_RETURN_IF_ERROR(c.Run(begin));
    Status st = fn(c);
    if (st.ok()) st = c.Run("COMMIT");
    if (!st.ok()) (void)c.Run("ROLLBACK");  // fails harmlessly when COMMIT already ended it
    return st;
  }

  Result<Lease> AcquireReader() {
    std::unique_lock<std::mutex> lock(pool_mu_);
    for (;;) {
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return Lease(this, std::move(c));
      }
      if (readers_ < std::max(1, options_.pool_size)) {
        ++readers_;
        lock.unlock();
        auto c = SqliteConnection::Open(path_, options_.read_only, options_.busy_timeout_ms);
        if (!c.ok()) {
          std::lock_guard<std::mutex> relock(pool_mu_);
          --readers_;
          pool_cv_.notify_one();
          return c.status();
        }
        return Lease(this, std::move(*c));
      }
      pool_cv_.wait(lock);
    }
  }

  void Release(std::unique_ptr<SqliteConnection> c) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    idle_.push_back(std::move(c));
    pool_cv_.notify_one();
  }

  const std::string path_;
  const std::string describe_;
  const StoreOptions options_;
  std::mutex write_mu_;
  std::unique_ptr<SqliteConnection> writer_;
  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<SqliteConnection>> idle_;
  int readers_ = 0;
};

Status CheckPath(const std::string& path, bool read_only) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return InvalidArgument("the path is a directory, not a database file");
  if (read_only) {
    if (!fs::exists(p, ec)) return NotFound("the database file does not exist");
    return Status::Ok();
  }
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) return IoError("the directory " + dir.string() + " does not exist");
  return Status::Ok();
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

}  // namespace

Result<std::unique_ptr<SqlDatabase>> OpenSqliteDatabase(const std::string& raw_path, const StoreOptions& options) {
  const std::string path = Absolute(raw_path);
  const std::string context = "sqlite:" + path + ": open";
  if (path.empty()) return InvalidArgument("sqlite store: empty database path");
  if (Status st = CheckPath(path, options.read_only); !st.ok()) return st.WithContext(context);
  auto db = std::make_unique<SqliteDatabase>(path, options);
  if (Status st = db->Init(); !st.ok()) return st.WithContext(context);
  return std::unique_ptr<SqlDatabase>(std::move(db));
}

Result<std::unique_ptr<TenantStore>> OpenSqliteTenantStore(const std::string& path, const StoreOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(auto db, OpenSqliteDatabase(path, options));
  const std::string context = db->Describe() + ": open";
  if (options.read_only) {
    auto v = ReadSchemaVersion(*db);
    if (!v.ok()) return v.status().WithContext(context);
    if (*v != LatestSchemaVersion()) {
      return FailedPrecondition("schema version " + std::to_string(*v) + " differs from this pagoda's (" +
                                std::to_string(LatestSchemaVersion()) +
                                "); a read-only open cannot migrate")
          .WithContext(context);
    }
  } else if (auto m = RunMigrations(*db, NowMs()); !m.ok()) {
    return m.status().WithContext(context);
  }
  return std::unique_ptr<TenantStore>(std::make_unique<SqlTenantStore>(std::move(db)));
}

}  // namespace pagoda::tenancy
