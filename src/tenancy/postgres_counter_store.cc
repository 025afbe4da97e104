#include "tenancy/postgres_counter_store.h"

#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

#include "base/log.h"

namespace pagoda::tenancy {
namespace {

// Every function locks the counter rows it needs in (key COLLATE "C", kind)
// order, and touches slot rows only under their key's kind-2 row, whose
// `used` counts them. (A fresh window's rows are inserted after the existing
// ones are locked; the rare deadlock that can cause is retried.)
constexpr const char* kSchema = R"sql(
SELECT pg_advisory_xact_lock(7130512);
CREATE TABLE IF NOT EXISTS pagoda_rate_counters (
  key text NOT NULL, kind smallint NOT NULL, window_start bigint NOT NULL, used bigint NOT NULL,
  PRIMARY KEY (key, kind, window_start));
CREATE TABLE IF NOT EXISTS pagoda_rate_slots (
  key text NOT NULL, slot_id text NOT NULL, expires_ms bigint NOT NULL,
  PRIMARY KEY (key, slot_id));

CREATE OR REPLACE FUNCTION pagoda_rate_acquire(p_keys text[], p_kinds int[], p_limits bigint[],
    p_amounts bigint[], p_window bigint, p_now bigint, p_lease bigint, p_slot text)
RETURNS bigint[] LANGUAGE plpgsql AS $fn$
DECLARE
  n int := coalesce(array_length(p_keys, 1), 0);
  v_used bigint[] := array_fill(0::bigint, ARRAY[greatest(n, 1)]);
  v_refused int := 0;
  v_locked int := 0;
  v_n bigint;
  r record;
BEGIN
  -- Lock every counter row in (key, kind) order; create the missing ones
  -- (a new window) and lock again.
  FOR attempt IN 1..2 LOOP
    v_locked := 0;
    FOR r IN SELECT u.idx::int AS idx, c.used FROM pagoda_rate_counters c
             JOIN unnest(p_keys, p_kinds) WITH ORDINALITY AS u(k, kd, idx)
               ON c.key = u.k AND c.kind = u.kd AND c.window_start = CASE WHEN u.kd = 2 THEN 0 ELSE p_window END
             ORDER BY c.key COLLATE "C", c.kind FOR UPDATE OF c LOOP
      v_used[r.idx] := r.used;
      v_locked := v_locked + 1;
    END LOOP;
    EXIT WHEN v_locked = n;
    INSERT INTO pagoda_rate_counters (key, kind, window_start, used)
      SELECT u.k, u.kd, CASE WHEN u.kd = 2 THEN 0 ELSE p_window END, 0
      FROM unnest(p_keys, p_kinds) AS u(k, kd) ORDER BY u.k COLLATE "C", u.kd
      ON CONFLICT DO NOTHING;
  END LOOP;
  IF v_locked <> n THEN RAISE EXCEPTION 'pagoda_rate_acquire: counter rows missing'; END IF;
  -- A kind-2 row's `used` is the number of its slot rows. Expired ones are
  -- reaped when they would refuse someone, so a crashed holder's slots never do.
  FOR j IN 1..n LOOP
    IF p_kinds[j] = 2 AND v_used[j] + p_amounts[j] > p_limits[j] THEN
      WITH d AS (DELETE FROM pagoda_rate_slots s WHERE s.key = p_keys[j] AND s.expires_ms <= p_now RETURNING 1)
      SELECT count(*) INTO v_n FROM d;
      IF v_n > 0 THEN
        v_used[j] := greatest(0, v_used[j] - v_n);
        UPDATE pagoda_rate_counters c SET used = greatest(0, c.used - v_n)
          WHERE c.key = p_keys[j] AND c.kind = 2 AND c.window_start = 0;
      END IF;
    END IF;
  END LOOP;
  FOR j IN 1..n LOOP
    IF v_used[j] + p_amounts[j] > p_limits[j] THEN v_refused := j; EXIT; END IF;
  END LOOP;
  IF v_refused = 0 THEN
    UPDATE pagoda_rate_counters c SET used = c.used + u.amt
      FROM unnest(p_keys, p_kinds, p_amounts) AS u(k, kd, amt)
      WHERE u.amt > 0 AND c.key = u.k AND c.kind = u.kd
        AND c.window_start = CASE WHEN u.kd = 2 THEN 0 ELSE p_window END;
    INSERT INTO pagoda_rate_slots (key, slot_id, expires_ms)
      SELECT u.k, p_slot, p_now + p_lease FROM unnest(p_keys, p_kinds, p_amounts) AS u(k, kd, amt)
      WHERE u.kd = 2 AND u.amt > 0;
    FOR j IN 1..n LOOP
      v_used[j] := v_used[j] + p_amounts[j];
    END LOOP;
  END IF;
  RETURN ARRAY[v_refused::bigint] || v_used[1:n];
END $fn$;

CREATE OR REPLACE FUNCTION pagoda_rate_finish(p_token_keys text[], p_window bigint, p_delta bigint,
    p_slot_keys text[], p_slot text)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM 1 FROM pagoda_rate_counters c
    JOIN (SELECT t.k, 1 AS kd, p_window AS ws FROM unnest(p_token_keys) AS t(k)
          UNION ALL SELECT t.k, 2, 0::bigint FROM unnest(p_slot_keys) AS t(k)) x
      ON c.key = x.k AND c.kind = x.kd AND c.window_start = x.ws
    ORDER BY c.key COLLATE "C", c.kind FOR UPDATE OF c;
  IF p_delta > 0 THEN
    INSERT INTO pagoda_rate_counters (key, kind, window_start, used)
      SELECT t.k, 1, p_window, p_delta FROM unnest(p_token_keys) AS t(k) ORDER BY t.k COLLATE "C"
      ON CONFLICT (key, kind, window_start) DO UPDATE SET used = pagoda_rate_counters.used + EXCLUDED.used;
  ELSIF p_delta < 0 THEN
    UPDATE pagoda_rate_counters c SET used = greatest(0, c.used + p_delta)
      WHERE c.key = ANY(p_token_keys) AND c.kind = 1 AND c.window_start = p_window;
  END IF;
  IF cardinality(p_slot_keys) > 0 THEN
    WITH d AS (DELETE FROM pagoda_rate_slots s WHERE s.key = ANY(p_slot_keys) AND s.slot_id = p_slot
               RETURNING s.key)
    UPDATE pagoda_rate_counters c SET used = greatest(0, c.used - 1)
      FROM d WHERE c.key = d.key AND c.kind = 2 AND c.window_start = 0;
  END IF;
END $fn$;

CREATE OR REPLACE FUNCTION pagoda_rate_renew(p_keys text[], p_slot text, p_expires bigint)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM 1 FROM pagoda_rate_counters c
    WHERE c.key = ANY(p_keys) AND c.kind = 2 AND c.window_start = 0
    ORDER BY c.key COLLATE "C" FOR UPDATE;
  UPDATE pagoda_rate_slots s SET expires_ms = p_expires WHERE s.key = ANY(p_keys) AND s.slot_id = p_slot;
END $fn$;

-- Expired slots of keys that never reach their limit again.
CREATE OR REPLACE FUNCTION pagoda_rate_reap(p_now bigint)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
  v_n bigint;
BEGIN
  FOR r IN SELECT DISTINCT s.key COLLATE "C" AS k FROM pagoda_rate_slots s WHERE s.expires_ms <= p_now ORDER BY 1 LOOP
    PERFORM 1 FROM pagoda_rate_counters c WHERE c.key = r.k AND c.kind = 2 AND c.window_start = 0 FOR UPDATE;
    WITH d AS (DELETE FROM pagoda_rate_slots s WHERE s.key = r.k AND s.expires_ms <= p_now RETURNING 1)
    SELECT count(*) INTO v_n FROM d;
    UPDATE pagoda_rate_counters c SET used = greatest(0, c.used - v_n)
      WHERE c.key = r.k AND c.kind = 2 AND c.window_start = 0;
  END LOOP;
END $fn$;
)sql";

constexpr int kAttempts = 3;  // a broken pooled connection or a deadlock victim is retried

// A text[] literal: every element quoted, '\' and '"' escaped.
std::string TextArray(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

template <class T>
std::string NumArray(const std::vector<T>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(items[i]);
  }
  return out + "}";
}

// "{0,5,3}" -> {0, 5, 3}.
bool ParseNumArray(const std::string& s, std::vector<int64_t>* out) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return false;
  out->clear();
  size_t i = 1;
  while (i < s.size() - 1) {
    size_t end = s.find(',', i);
    if (end == std::string::npos) end = s.size() - 1;
    try {
      out->push_back(std::stoll(s.substr(i, end - i)));
    } catch (...) {
      return false;
    }
    i = end + 1;
  }
  return true;
}

std::string WithConnectTimeout(const std::string& uri, int64_t timeout_ms) {
  if (uri.find("connect_timeout") != std::string::npos) return uri;
  const std::string secs = std::to_string(std::max<int64_t>(2, (timeout_ms + 999) / 1000));
  if (uri.find("://") == std::string::npos) return uri + " connect_timeout=" + secs;
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + "connect_timeout=" + secs;
}

class PostgresCounterStore final : public CounterStore {
 public:
  PostgresCounterStore(std::string uri, const CounterStoreOptions& options)
      : CounterStore(options), uri_(WithConnectTimeout(uri, options.timeout_ms)), shown_(RedactUrlPassword(uri)) {}

  Status Init() {
    return Run("create schema", [&](pqxx::connection& c) {
      pqxx::work tx(c);
      tx.exec(kSchema);
      tx.commit();
    });
  }

  Result<AcquireResult> Acquire(const std::vector<CounterRule>& rules, int64_t now_ms,
                                const std::string& slot_id) override {
    PAGODA_RETURN_IF_ERROR(ValidateRules(rules, slot_id));
    AcquireResult out;
    out.window_start_ms = WindowStart(now_ms, options_.window_ms);
    if (rules.empty()) {
      out.admitted = true;
      return out;
    }
    std::vector<std::string> keys;
    std::vector<int> kinds;
    std::vector<int64_t> limits, amounts;
    for (const CounterRule& r : rules) {
      keys.push_back(r.key);
      kinds.push_back(static_cast<int>(r.kind));
      limits.push_back(r.limit);
      amounts.push_back(r.amount);
    }
    std::string reply;
    PAGODA_RETURN_IF_ERROR(Run("acquire", [&](pqxx::connection& c) {
      pqxx::nontransaction tx(c);
      reply = tx.exec_prepared1("acquire", TextArray(keys), NumArray(kinds), NumArray(limits), NumArray(amounts),
                                out.window_start_ms, now_ms, options_.lease_ms, slot_id)[0]
                  .as<std::string>();
    }));
    std::vector<int64_t> v;
    if (!ParseNumArray(reply, &v) || v.size() != rules.size() + 1) {
      return Internal("rate limit store " + shown_ + ": unexpected acquire reply");
    }
    const int64_t reset = out.window_start_ms + options_.window_ms;
    out.refused_rule = static_cast<int>(v[0]) - 1;
    out.admitted = out.refused_rule < 0;
    for (size_t i = 0; i < rules.size(); ++i) {
      out.readings.push_back({rules[i].limit, v[i + 1], rules[i].kind == CounterKind::kConcurrent ? 0 : reset});
    }
    MaybeCollectGarbage(now_ms);
    return out;
  }

  Status Finish(const FinishRequest& r) override {
    PAGODA_RETURN_IF_ERROR(ValidateFinish(r));
    if ((r.token_keys.empty() || r.token_delta == 0) && r.slot_keys.empty()) return Status::Ok();
    return Run("finish", [&](pqxx::connection& c) {
      pqxx::nontransaction tx(c);
      tx.exec_prepared("finish", TextArray(r.token_keys), r.window_start_ms, r.token_delta, TextArray(r.slot_keys),
                       r.slot_id);
    });
  }

  Status RenewSlots(const std::vector<std::string>& slot_keys, const std::string& slot_id, int64_t now_ms) override {
    if (slot_keys.empty()) return Status::Ok();
    return Run("renew", [&](pqxx::connection& c) {
      pqxx::nontransaction tx(c);
      tx.exec_prepared("renew", TextArray(slot_keys), slot_id, now_ms + options_.lease_ms);
    });
  }

  Result<int64_t> Used(const std::string& key, CounterKind kind, int64_t now_ms) override {
    int64_t used = 0;
    PAGODA_RETURN_IF_ERROR(Run("read", [&](pqxx::connection& c) {
      pqxx::nontransaction tx(c);
      pqxx::result res =
          kind == CounterKind::kConcurrent
              ? tx.exec_params("SELECT count(*) FROM pagoda_rate_slots WHERE key = $1 AND expires_ms > $2", key, now_ms)
              : tx.exec_params("SELECT used FROM pagoda_rate_counters WHERE key = $1 AND kind = $2 AND window_start = $3",
                               key, static_cast<int>(kind), WindowStart(now_ms, options_.window_ms));
      used = res.empty() ? 0 : res[0][0].as<int64_t>();
    }));
    return used;
  }

  std::string Describe() const override { return shown_; }

 private:
  // Runs fn on a pooled connection; a broken connection is dropped and the
  // call retried on a fresh one, as is a deadlock victim.
  template <class Fn>
  Status Run(const char* what, Fn&& fn) {
    std::string last;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      std::unique_ptr<pqxx::connection> c;
      Status st = Take(&c);
      if (!st.ok()) return st;
      try {
        fn(*c);
        Give(std::move(c));
        return Status::Ok();
      } catch (const pqxx::broken_connection& e) {
        last = e.what();
        Drop();
      } catch (const pqxx::transaction_rollback& e) {  // deadlock / serialization: retry
        last = e.what();
        Give(std::move(c));
      } catch (const std::exception& e) {
        last = e.what();
        if (c->is_open()) {
          Give(std::move(c));
        } else {
          Drop();
        }
        break;
      }
    }
    while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
    return IoError("rate limit store " + shown_ + ": " + what + ": " + last);
  }

  // A pooled connection, or a new one while fewer than pool_size exist.
  Status Take(std::unique_ptr<pqxx::connection>* out) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !idle_.empty() || open_ < options_.pool_size; });
      if (!idle_.empty()) {
        *out = std::move(idle_.back());
        idle_.pop_back();
        return Status::Ok();
      }
      ++open_;
    }
    try {
      auto c = std::make_unique<pqxx::connection>(uri_);
      {
        pqxx::nontransaction tx(*c);
        const std::string t = std::to_string(options_.timeout_ms);
        // Timeouts make a stuck server an error, not a hang. The functions'
        // statements take one cached plan each (replanning their array
        // arguments every call costs more than it gains). Commits stay
        // synchronous: counters survive a server crash.
        tx.exec("SET statement_timeout = " + t + "; SET lock_timeout = " + t +
                "; SET plan_cache_mode = force_generic_plan");
      }
      c->prepare("acquire", "SELECT pagoda_rate_acquire($1::text[], $2::int[], $3::bigint[], $4::bigint[], $5, $6, $7, $8)");
      c->prepare("finish", "SELECT pagoda_rate_finish($1::text[], $2, $3, $4::text[], $5)");
      c->prepare("renew", "SELECT pagoda_rate_renew($1::text[], $2, $3)");
      *out = std::move(c);
      return Status::Ok();
    } catch (const std::exception& e) {
      Drop();
      std::string m = e.what();
      while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
      return IoError("rate limit store " + shown_ + ": connect: " + m);
    }
  }
  void Give(std::unique_ptr<pqxx::connection> c) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(std::move(c));
    cv_.notify_one();
  }
  void Drop() {
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
    cv_.notify_one();
  }

  // Old windows (before the previous one) and slots expired a lease ago go,
  // at most once per window per process; failures only delay the next try.
  void MaybeCollectGarbage(int64_t now_ms) {
    const int64_t ws = WindowStart(now_ms, options_.window_ms);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ws <= last_gc_window_) return;
      last_gc_window_ = ws;
    }
    Status st = Run("collect", [&](pqxx::connection& c) {
      pqxx::nontransaction tx(c);
      tx.exec_params("DELETE FROM pagoda_rate_counters WHERE kind <> 2 AND window_start < $1",
                     ws - options_.window_ms);
      tx.exec_params("SELECT pagoda_rate_reap($1)", now_ms - options_.lease_ms);
    });
    if (!st.ok()) {
      PAGODA_LOG(Debug) << st.ToString();
    }
  }

  const std::string uri_;
  const std::string shown_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  int open_ = 0;
  int64_t last_gc_window_ = INT64_MIN;
};

}  // namespace

Result<std::unique_ptr<CounterStore>> OpenPostgresCounterStore(const std::string& uri,
                                                               const CounterStoreOptions& options) {
  PAGODA_RETURN_IF_ERROR(ValidateCounterOptions(options));
  if (uri.empty()) return InvalidArgument("PostgreSQL counter store URI is empty");
  auto store = std::make_unique<PostgresCounterStore>(uri, options);
  PAGODA_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<CounterStore>(std::move(store));
}

}  // namespace pagoda::tenancy
