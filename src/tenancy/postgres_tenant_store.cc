#include "tenancy/postgres_tenant_store.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include <pqxx/pqxx>

#include "tenancy/sql_tenant_store.h"
#include "tenancy/store_schema.h"

namespace pagoda::tenancy {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "... ? ... ?" -> "... $1 ... $2" (our statements never hold a literal '?').
std::string Placeholders(const std::string& sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  for (char c : sql) {
    if (c == '?') {
      out += '$';
      out += std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

std::string ParamText(const SqlValue& v) {
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", *d);
    return buf;
  }
  return SqlText(v);
}

std::string FirstLine(const char* what) {
  std::string s(what);
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

bool IsConnectionSqlState(const std::string& state) {
  // 08xxx connection exceptions, 57P01..57P03 admin shutdown / crash / cannot connect now.
  return state.rfind("08", 0) == 0 || state == "57P01" || state == "57P02" || state == "57P03";
}

// Thrown out of a transaction body to carry a Status past libpqxx.
struct BodyFailed {
  Status status;
};

class PgConnection final : public SqlConnection {
 public:
  explicit PgConnection(pqxx::transaction_base& txn) : txn_(txn) {}
  Result<std::vector<SqlRow>> Exec(const std::string& sql, std::span<const SqlValue> params) override {
    // libpqxx exceptions propagate to PgDatabase, which maps them.
    std::vector<std::string> args;
    args.reserve(params.size());
    for (const SqlValue& p : params) args.push_back(ParamText(p));
    const pqxx::result r = txn_.exec_params(Placeholders(sql), pqxx::prepare::make_dynamic_params(args));
    std::vector<SqlRow> rows;
    rows.reserve(r.size());
    for (const auto& row : r) {
      SqlRow out(row.size());
      for (size_t c = 0; c < row.size(); ++c) {
        if (!row[static_cast<int>(c)].is_null()) out[c] = std::string(row[static_cast<int>(c)].c_str());
      }
      rows.push_back(std::move(out));
    }
    return rows;
  }

 private:
  pqxx::transaction_base& txn_;
};

class PgDatabase final : public SqlDatabase {
 public:
  PgDatabase(std::string url, StoreOptions options)
      : url_(std::move(url)), describe_(RedactPostgresUrl(url_)), options_(options) {
    conninfo_ = url_ + (url_.find('?') == std::string::npos ? "?" : "&") +
                "connect_timeout=" + std::to_string(std::max(1, options_.connect_timeout_s));
  }

  SqlDialect dialect() const override { return SqlDialect::kPostgres; }
  const std::string& Describe() const override { return describe_; }

  Status Transact(bool write, const std::function<Status(SqlConnection&)>& fn) override {
    (void)write;  // PostgreSQL locks rows as statements touch them
    return WithConnection([&](pqxx::connection& conn) {
      pqxx::work txn(conn);
      PgConnection c(txn);
      Status st = fn(c);
      if (!st.ok()) throw BodyFailed{st};  // rolls back (work's destructor aborts)
      txn.commit();
      return Status::Ok();
    });
  }

  Result<std::vector<SqlRow>> Query(const std::string& sql, std::span<const SqlValue> params) override {
    std::vector<SqlRow> rows;
    Status st = WithConnection([&](pqxx::connection& conn) {
      pqxx::nontransaction txn(conn);
      PgConnection c(txn);
      auto r = c.Exec(sql, params);
      if (!r.ok()) throw BodyFailed{r.status()};
      rows = std::move(*r);
      return Status::Ok();
    });
    if (!st.ok()) return st;
    return rows;
  }

  Status Connect() {
    auto c = NewConnection();
    if (!c.ok()) return c.status();
    std::lock_guard<std::mutex> lock(mu_);
    ++open_;
    idle_.push_back(std::move(*c));
    return Status::Ok();
  }

 private:
  Result<std::unique_ptr<pqxx::connection>> NewConnection() {
    try {
      auto c = std::make_unique<pqxx::connection>(conninfo_);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      c->inhibit_reactivation(true);  // a broken connection is replaced, never revived mid-transaction
#pragma GCC diagnostic pop
      pqxx::nontransaction t(*c);
      t.exec("SET client_min_messages = warning");
      return c;
    } catch (const pqxx::broken_connection& e) {
      return IoError("server unreachable: " + FirstLine(e.what()));
    } catch (const std::exception& e) {
      return IoError("cannot connect: " + FirstLine(e.what()));
    }
  }

  // Runs `body` on a pooled connection, mapping libpqxx exceptions. A broken
  // connection is dropped (with the idle ones: a restart kills them all) and
  // the body retried once on a fresh connection, unless the COMMIT itself was
  // in doubt.
  Status WithConnection(const std::function<Status(pqxx::connection&)>& body) {
    for (int attempt = 0;; ++attempt) {
      auto acquired = Acquire();
      if (!acquired.ok()) return acquired.status();
      std::unique_ptr<pqxx::connection> conn = std::move(*acquired);
      bool broken = false;
      bool retry = false;
      Status st;
      try {
        st = body(*conn);
      } catch (const BodyFailed& f) {
        st = f.status;
      } catch (const pqxx::in_doubt_error& e) {
        broken = true;
        st = IoError("the connection broke during COMMIT; the outcome is unknown: " + FirstLine(e.what()));
      } catch (const pqxx::broken_connection& e) {
        broken = true;
        retry = attempt == 0;
        st = IoError("server unreachable: " + FirstLine(e.what()));
      } catch (const pqxx::unique_violation& e) {
        st = InvalidArgument("already exists: " + FirstLine(e.what()));
      } catch (const pqxx::foreign_key_violation& e) {
        st = NotFound("refers to a missing row: " + FirstLine(e.what()));
      } catch (const pqxx::integrity_constraint_violation& e) {
        st = InvalidArgument("constraint failed: " + FirstLine(e.what()));
      } catch (const pqxx::sql_error& e) {
        if (IsConnectionSqlState(e.sqlstate())) {
          broken = true;
          retry = attempt == 0;
          st = IoError("server unreachable: " + FirstLine(e.what()));
        } else if (e.sqlstate().rfind("53", 0) == 0) {
          st = ResourceExhausted("server out of resources: " + FirstLine(e.what()));
        } else {
          st = Internal("sql error " + e.sqlstate() + ": " + FirstLine(e.what()));
        }
      } catch (const std::exception& e) {
        broken = !conn->is_open();
        st = Internal(FirstLine(e.what()));
      }
      if (broken || !conn->is_open()) {
        Discard(std::move(conn));
      } else {
        Release(std::move(conn));
      }
      if (!retry) return st;
    }
  }

  Result<std::unique_ptr<pqxx::connection>> Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
      if (open_ < std::max(1, options_.pool_size)) {
        ++open_;
        lock.unlock();
        auto c = NewConnection();
        if (!c.ok()) {
          std::lock_guard<std::mutex> relock(mu_);
          --open_;
          cv_.notify_one();
        }
        return c;
      }
      cv_.wait(lock);
    }
  }

  void Release(std::unique_ptr<pqxx::connection> c) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(std::move(c));
    cv_.notify_one();
  }

  void Discard(std::unique_ptr<pqxx::connection> c) {
    std::vector<std::unique_ptr<pqxx::connection>> stale;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stale.swap(idle_);
      open_ -= 1 + static_cast<int>(stale.size());
      cv_.notify_all();
    }
    // Closed outside the lock: closing a dead socket can take a moment.
    c.reset();
    stale.clear();
  }

  const std::string url_;
  const std::string describe_;
  const StoreOptions options_;
  std::string conninfo_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  int open_ = 0;
};

}  // namespace

std::string RedactPostgresUrl(const std::string& url) {
  std::string out = url;
  if (auto q = out.find('?'); q != std::string::npos) out.resize(q);  // parameters may hold a password
  const auto scheme = out.find("://");
  if (scheme == std::string::npos) return "postgresql:(connection string)";
  const auto at = out.find('@', scheme + 3);
  if (at == std::string::npos) return out;
  const auto colon = out.find(':', scheme + 3);
  if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
  return out;
}

Result<std::unique_ptr<SqlDatabase>> OpenPostgresDatabase(const std::string& url, const StoreOptions& options) {
  auto db = std::make_unique<PgDatabase>(url, options);
  if (Status st = db->Connect(); !st.ok()) return st.WithContext(db->Describe() + ": open");
  return std::unique_ptr<SqlDatabase>(std::move(db));
}

Result<std::unique_ptr<TenantStore>> OpenPostgresTenantStore(const std::string& url, const StoreOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(auto db, OpenPostgresDatabase(url, options));
  if (auto m = RunMigrations(*db, NowMs()); !m.ok()) return m.status().WithContext(db->Describe() + ": open");
  return std::unique_ptr<TenantStore>(std::make_unique<SqlTenantStore>(std::move(db)));
}

}  // namespace pagoda::tenancy
