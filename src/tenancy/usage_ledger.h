// UsageLedger: one UsageRecord per request, written to the TenantStore in
// batches by a background thread, off the request path. THE audited code path
// for per-request records: the ledger rows and the request log line
// (MetadataLogLine) are both built from a UsageRecord, a type with metadata
// fields only (ids, operator-configured model / deployment names, counts,
// times, an enum status): never prompt or completion text, tool arguments or
// anything derived from them, and never a key secret.
//
// Durability: a batch is one store transaction. Once Flush() returns OK every
// record recorded before it is committed (SQLite WAL: survives kill -9 of
// the process). Records still queued when the process is killed are lost;
// the queue is drained every flush_interval_ms.
//
// Store outages: a failed batch stays at the head of the queue and is retried
// with backoff (request ids make retries idempotent), so nothing is lost once
// the store returns. Record() never blocks on I/O; the queue is bounded by
// max_pending (past it records are dropped and counted in `dropped`), and
// AdmissionStatus() turns non-OK well before that (admit_high_water), so the
// server stops admitting requests it could not meter: fail closed.
//
// Threads: Record, Flush, AdmissionStatus and stats from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "tenancy/records.h"
#include "tenancy/tenant_store.h"

namespace pagoda::tenancy {

struct UsageLedgerOptions {
  int flush_interval_ms = 50;
  size_t batch_size = 256;
  size_t admit_high_water = 100'000;  // AdmissionStatus() fails at this backlog
  size_t max_pending = 1'000'000;     // Record() drops (and counts) past this
  int max_retry_backoff_ms = 2000;
  int shutdown_timeout_ms = 5000;     // the destructor's last attempts to write
};

struct UsageLedgerStats {
  int64_t recorded = 0;  // accepted by Record
  int64_t written = 0;   // committed to the store
  int64_t pending = 0;   // queued, not yet committed
  int64_t batches = 0;   // committed transactions
  int64_t failures = 0;  // failed batch attempts (each retried)
  int64_t dropped = 0;   // refused by a full queue, or left at shutdown
};

class UsageLedger {
 public:
  explicit UsageLedger(TenantStore& store, UsageLedgerOptions options = {});
  // Writes what remains (up to shutdown_timeout_ms while the store fails).
  ~UsageLedger();
  UsageLedger(const UsageLedger&) = delete;
  UsageLedger& operator=(const UsageLedger&) = delete;

  // Enqueues; never waits for the store. An empty request_id gets a random
  // "req_..." id; out-of-range fields are clamped rather than losing the row.
  void Record(UsageRecord record);

  // Waits until every record recorded before the call is committed.
  // DeadlineExceeded (naming the backlog and the last store error) on timeout.
  Status Flush(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // OK while the backlog is below admit_high_water; ResourceExhausted
  // otherwise (the server answers 503 rather than serve unmetered).
  Status AdmissionStatus() const;

  UsageLedgerStats stats() const;

 private:
  void Run();

  TenantStore& store_;
  const UsageLedgerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // wakes the writer
  std::condition_variable done_cv_;  // wakes Flush
  std::deque<UsageRecord> queue_;
  uint64_t enqueued_seq_ = 0;  // records ever enqueued
  uint64_t written_seq_ = 0;   // of which committed (queue order)
  bool flush_requested_ = false;
  bool stop_ = false;
  Status last_error_;
  UsageLedgerStats stats_;
  std::thread writer_;
};

// The request's log line, from metadata only (logfmt: key=value, values
// quoted when needed, control bytes replaced). Servers and gateways log
// requests through this function and nothing else.
std::string MetadataLogLine(const UsageRecord& record);

}  // namespace pagoda::tenancy
