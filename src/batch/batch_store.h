// BatchStore: files' metadata, batches and their lines in the control
// plane's SQL store (the same SQLite file or PostgreSQL database as tenants
// and the usage ledger: schema migration 3, tenancy/store_schema.cc), so a
// batch survives a crash or restart of the process running it.
//
// Exactly once: CommitLines moves a line from pending to done/error and
// writes its usage record in the same transaction; a line already committed
// is skipped, so a line answered twice (its process died between answering
// and committing) counts once, with the result that was committed.
//
// Tenancy: every read names the tenant; another tenant's id is NotFound,
// never its record. Thread-safe (the database pools connections).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "batch/batch_types.h"
#include "tenancy/records.h"
#include "tenancy/sql_database.h"
#include "tenancy/tenant_store.h"

namespace pagoda::batch {

// One line's answer, for CommitLines.
struct LineCommit {
  int64_t line_no = 0;
  LineState state = LineState::kDone;  // done (2xx) or error
  int status_code = 0;
  int64_t result_offset = 0;  // the output / error line in the results file
  int64_t result_length = 0;
  std::optional<tenancy::UsageRecord> usage;  // written with the line (control plane only)
};

class BatchStore {
 public:
  // `url`: as for the tenant store ("sqlite:PATH", a path, "postgresql://...");
  // opens and migrates.
  static Result<std::unique_ptr<BatchStore>> Open(const std::string& url, const tenancy::StoreOptions& options = {});
  explicit BatchStore(std::unique_ptr<tenancy::SqlDatabase> db);

  const std::string& Describe() const { return db_->Describe(); }

  // Files.
  Status CreateFile(const FileRecord& f);
  Result<FileRecord> GetFile(std::string_view tenant_id, std::string_view id);  // live files only
  // Newest first; `purpose` "" = any.
  Result<std::vector<FileRecord>> ListFiles(std::string_view tenant_id, std::string_view purpose,
                                            const ListPage& page);
  Status MarkFileDeleted(std::string_view tenant_id, std::string_view id, int64_t now_ms);
  // Live files whose expires_at has passed (for the janitor).
  Result<std::vector<FileRecord>> ExpiredFiles(int64_t now_ms, int64_t limit);

  // Batches.
  Status CreateBatch(const BatchRecord& b);
  Result<BatchRecord> GetBatch(std::string_view tenant_id, std::string_view id);
  Result<BatchRecord> GetBatchById(std::string_view id);  // the runner's view (any tenant)
  Result<std::vector<BatchRecord>> ListBatches(std::string_view tenant_id, const ListPage& page);
  // Batches that are not terminal, oldest first.
  Result<std::vector<BatchRecord>> ActiveBatches();

  // validating -> in_progress with its lines (invalid ones already in their
  // error state), counts and in_progress_at, in one transaction.
  Status StartBatch(std::string_view batch_id, std::span<const LineRecord> lines, const RequestCounts& counts,
                    int64_t now_ms);
  // status := to (and its timestamp := now) when the status is one of
  // `from`; false when it was not.
  Result<bool> Transition(std::string_view batch_id, std::span<const BatchStatus> from, BatchStatus to,
                          int64_t now_ms);
  // Cancels a tenant's batch: validating / in_progress -> cancelling.
  // FailedPrecondition for one that is finalizing or done; NotFound for
  // another tenant's.
  Result<BatchRecord> Cancel(std::string_view tenant_id, std::string_view id, int64_t now_ms);
  Status Fail(std::string_view batch_id, std::string_view errors_json, int64_t now_ms);

  // Pending lines with line_no > after, in order, at most `limit`.
  Result<std::vector<LineRecord>> PendingLines(std::string_view batch_id, int64_t after, int64_t limit);
  // Every line in order with its result (finalization), `limit` at a time.
  Result<std::vector<LineRecord>> Lines(std::string_view batch_id, int64_t after, int64_t limit);
  // Commits answers (see the header comment); returns how many were new.
  Result<int64_t> CommitLines(std::string_view batch_id, std::span<const LineCommit> lines);
  // Finalization: the output and error files' records and the batch's
  // final status and timestamp, in one transaction.
  Status Finish(std::string_view batch_id, const std::optional<FileRecord>& output,
                const std::optional<FileRecord>& errors, BatchStatus final_status, int64_t now_ms);

 private:
  std::unique_ptr<tenancy::SqlDatabase> db_;
};

}  // namespace pagoda::batch
