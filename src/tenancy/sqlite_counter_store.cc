#include "tenancy/sqlite_counter_store.h"

#include <sqlite3.h>

#include <mutex>
#include <utility>

namespace pagoda::tenancy {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS pagoda_rate_counters (
  key TEXT NOT NULL, kind INTEGER NOT NULL, window_start INTEGER NOT NULL, used INTEGER NOT NULL,
  PRIMARY KEY (key, kind, window_start)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pagoda_rate_slots (
  key TEXT NOT NULL, slot_id TEXT NOT NULL, expires_ms INTEGER NOT NULL,
  PRIMARY KEY (key, slot_id)) WITHOUT ROWID;
)sql";

enum Stmt {
  kBegin,
  kCommit,
  kRollback,
  kReadWindow,
  kAddWindow,
  kSettleWindow,
  kExpireSlots,
  kCountSlots,
  kTakeSlot,
  kReleaseSlot,
  kRenewSlot,
  kGcWindows,
  kGcSlots,
  kNumStmts
};

constexpr const char* kSql[kNumStmts] = {
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    "SELECT used FROM pagoda_rate_counters WHERE key = ?1 AND kind = ?2 AND window_start = ?3",
    "INSERT INTO pagoda_rate_counters (key, kind, window_start, used) VALUES (?1, ?2, ?3, ?4) "
    "ON CONFLICT (key, kind, window_start) DO UPDATE SET used = used + excluded.used",
    "UPDATE pagoda_rate_counters SET used = max(0, used + ?4) WHERE key = ?1 AND kind = ?2 AND window_start = ?3",
    "DELETE FROM pagoda_rate_slots WHERE key = ?1 AND expires_ms <= ?2",
    "SELECT count(*) FROM pagoda_rate_slots WHERE key = ?1 AND expires_ms > ?2",
    "INSERT INTO pagoda_rate_slots (key, slot_id, expires_ms) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (key, slot_id) DO UPDATE SET expires_ms = excluded.expires_ms",
    "DELETE FROM pagoda_rate_slots WHERE key = ?1 AND slot_id = ?2",
    "UPDATE pagoda_rate_slots SET expires_ms = ?3 WHERE key = ?1 AND slot_id = ?2",
    "DELETE FROM pagoda_rate_counters WHERE kind <> 2 AND window_start < ?1",
    "DELETE FROM pagoda_rate_slots WHERE expires_ms <= ?1",
};

class SqliteCounterStore final : public CounterStore {
 public:
  SqliteCounterStore(std::string path, const CounterStoreOptions& options) : CounterStore(options), path_(std::move(path)) {}
  ~SqliteCounterStore() override {
    for (sqlite3_stmt* s : stmts_) sqlite3_finalize(s);
    if (db_) sqlite3_close(db_);
  }

  Status Open() {
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      return Error("open");
    }
    sqlite3_busy_timeout(db_, static_cast<int>(std::min<int64_t>(options_.timeout_ms, 1 << 30)));
    PAGODA_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
    PAGODA_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL"));
    PAGODA_RETURN_IF_ERROR(Exec(kSchema));
    for (int i = 0; i < kNumStmts; ++i) {
      if (sqlite3_prepare_v3(db_, kSql[i], -1, SQLITE_PREPARE_PERSISTENT, &stmts_[i], nullptr) != SQLITE_OK) {
        return Error("prepare");
      }
    }
    return Status::Ok();
  }

  Result<AcquireResult> Acquire(const std::vector<CounterRule>& rules, int64_t now_ms,
                                const std::string& slot_id) override {
    PAGODA_RETURN_IF_ERROR(ValidateRules(rules, slot_id));
    std::lock_guard<std::mutex> lock(mu_);
    AcquireResult out;
    out.window_start_ms = WindowStart(now_ms, options_.window_ms);
    const int64_t reset = out.window_start_ms + options_.window_ms;
    PAGODA_RETURN_IF_ERROR(Step(kBegin));
    Status st = [&]() -> Status {
      for (size_t i = 0; i < rules.size(); ++i) {
        const CounterRule& r = rules[i];
        int64_t used = 0;
        if (r.kind == CounterKind::kConcurrent) {
          PAGODA_RETURN_IF_ERROR(Step(kExpireSlots, r.key, now_ms));
          PAGODA_RETURN_IF_ERROR(Query(kCountSlots, &used, r.key, now_ms));
        } else {
          PAGODA_RETURN_IF_ERROR(Query(kReadWindow, &used, r.key, static_cast<int64_t>(r.kind), out.window_start_ms));
        }
        out.readings.push_back({r.limit, used, r.kind == CounterKind::kConcurrent ? 0 : reset});
        if (out.refused_rule < 0 && used + r.amount > r.limit) out.refused_rule = static_cast<int>(i);
      }
      if (out.refused_rule >= 0) return Status::Ok();
      for (size_t i = 0; i < rules.size(); ++i) {
        const CounterRule& r = rules[i];
        if (r.amount == 0) continue;
        if (r.kind == CounterKind::kConcurrent) {
          PAGODA_RETURN_IF_ERROR(Step(kTakeSlot, r.key, slot_id, now_ms + options_.lease_ms));
        } else {
          PAGODA_RETURN_IF_ERROR(Step(kAddWindow, r.key, static_cast<int64_t>(r.kind), out.window_start_ms, r.amount));
        }
        out.readings[i].used += r.amount;
      }
      out.admitted = true;
      return Status::Ok();
    }();
    PAGODA_RETURN_IF_ERROR(EndTransaction(st, out.admitted));
    MaybeCollectGarbage(now_ms);
    return out;
  }

  Status Finish(const FinishRequest& r) override {
    PAGODA_RETURN_IF_ERROR(ValidateFinish(r));
    if (r.token_keys.empty() && r.slot_keys.empty()) return Status::Ok();
    std::lock_guard<std::mutex> lock(mu_);
    PAGODA_RETURN_IF_ERROR(Step(kBegin));
    Status st = [&]() -> Status {
      if (r.token_delta != 0) {
        for (const std::string& k : r.token_keys) {
          if (r.token_delta > 0) {
            PAGODA_RETURN_IF_ERROR(Step(kAddWindow, k, static_cast<int64_t>(CounterKind::kTokens), r.window_start_ms,
                                        r.token_delta));
          } else {
            PAGODA_RETURN_IF_ERROR(Step(kSettleWindow, k, static_cast<int64_t>(CounterKind::kTokens),
                                        r.window_start_ms, r.token_delta));
          }
        }
      }
      for (const std::string& k : r.slot_keys) PAGODA_RETURN_IF_ERROR(Step(kReleaseSlot, k, r.slot_id));
      return Status::Ok();
    }();
    return EndTransaction(st, true);
  }

  Status RenewSlots(const std::vector<std::string>& slot_keys, const std::string& slot_id, int64_t now_ms) override {
    if (slot_keys.empty()) return Status::Ok();
    std::lock_guard<std::mutex> lock(mu_);
    PAGODA_RETURN_IF_ERROR(Step(kBegin));
    Status st = [&]() -> Status {
      for (const std::string& k : slot_keys) {
        PAGODA_RETURN_IF_ERROR(Step(kRenewSlot, k, slot_id, now_ms + options_.lease_ms));
      }
      return Status::Ok();
    }();
    return EndTransaction(st, true);
  }

  Result<int64_t> Used(const std::string& key, CounterKind kind, int64_t now_ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t used = 0;
    if (kind == CounterKind::kConcurrent) {
      PAGODA_RETURN_IF_ERROR(Query(kCountSlots, &used, key, now_ms));
    } else {
      PAGODA_RETURN_IF_ERROR(
          Query(kReadWindow, &used, key, static_cast<int64_t>(kind), WindowStart(now_ms, options_.window_ms)));
    }
    return used;
  }

  std::string Describe() const override { return "sqlite:" + path_; }

 private:
  Status Error(const char* what) const {
    const char* msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    return IoError(std::string("rate limit store ") + Describe() + ": " + what + ": " + msg);
  }

  Status Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "error";
      sqlite3_free(err);
      return IoError("rate limit store " + Describe() + ": " + m);
    }
    return Status::Ok();
  }

  void Bind(sqlite3_stmt* s, int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
  void Bind(sqlite3_stmt* s, int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  template <class... Args>
  sqlite3_stmt* Prepare(Stmt which, const Args&... args) {
    sqlite3_stmt* s = stmts_[which];
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    int i = 0;
    (Bind(s, ++i, args), ...);
    return s;
  }

  // Runs a statement that returns no rows.
  template <class... Args>
  Status Step(Stmt which, const Args&... args) {
    sqlite3_stmt* s = Prepare(which, args...);
    const int rc = sqlite3_step(s);
    Status st = rc == SQLITE_DONE || rc == SQLITE_ROW ? Status::Ok() : Error(kSql[which]);
    sqlite3_reset(s);
    return st;
  }

  // Runs a statement returning at most one integer (0 when no row).
  template <class... Args>
  Status Query(Stmt which, int64_t* out, const Args&... args) {
    sqlite3_stmt* s = Prepare(which, args...);
    const int rc = sqlite3_step(s);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    Status st = rc == SQLITE_DONE || rc == SQLITE_ROW ? Status::Ok() : Error(kSql[which]);
    sqlite3_reset(s);
    return st;
  }

  Status EndTransaction(const Status& body, bool commit) {
    if (body.ok() && commit) {
      Status st = Step(kCommit);
      if (st.ok()) return st;
      (void)Step(kRollback);
      return st;
    }
    (void)Step(kRollback);
    return body;
  }

  // Drops windows older than the previous one and expired slots, at most once
  // per window per process (called with mu_ held).
  void MaybeCollectGarbage(int64_t now_ms) {
    const int64_t ws = WindowStart(now_ms, options_.window_ms);
    if (ws <= last_gc_window_) return;
    last_gc_window_ = ws;
    if (!Step(kBegin).ok()) return;
    Status st = Step(kGcWindows, ws - options_.window_ms);
    if (st.ok()) st = Step(kGcSlots, now_ms);
    (void)EndTransaction(st, true);
  }

  std::string path_;
  std::mutex mu_;  // one connection, one transaction at a time in this process
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmts_[kNumStmts] = {};
  int64_t last_gc_window_ = INT64_MIN;
};

}  // namespace

Result<std::unique_ptr<CounterStore>> OpenSqliteCounterStore(const std::string& path,
                                                             const CounterStoreOptions& options) {
  PAGODA_RETURN_IF_ERROR(ValidateCounterOptions(options));
  if (path.empty()) return InvalidArgument("SQLite counter store path is empty");
  auto store = std::make_unique<SqliteCounterStore>(path, options);
  PAGODA_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<CounterStore>(std::move(store));
}

}  // namespace pagoda::tenancy
