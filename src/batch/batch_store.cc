#include "batch/batch_store.h"

#include <utility>

#include "tenancy/usage_sql.h"

namespace pagoda::batch {
namespace {

using tenancy::SqlConnection;
using tenancy::SqlInt;
using tenancy::SqlRow;
using tenancy::SqlText;
using tenancy::SqlValue;
using Params = std::vector<SqlValue>;

SqlValue Text(std::string_view s) { return std::string(s); }
SqlValue Int(int64_t v) { return v; }

constexpr const char* kFileCols = "id, tenant_id, purpose, filename, bytes, lines, created_at, expires_at, deleted_at";

FileRecord FileOf(const SqlRow& r) {
  FileRecord f;
  f.id = SqlText(r[0]);
  f.tenant_id = SqlText(r[1]);
  f.purpose = SqlText(r[2]);
  f.filename = SqlText(r[3]);
  f.bytes = SqlInt(r[4]);
  f.lines = SqlInt(r[5]);
  f.created_at = SqlInt(r[6]);
  f.expires_at = SqlInt(r[7]);
  f.deleted_at = SqlInt(r[8]);
  return f;
}

Params FileParams(const FileRecord& f) {
  return {Text(f.id),  Text(f.tenant_id),  Text(f.purpose),    Text(f.filename), Int(f.bytes),
          Int(f.lines), Int(f.created_at), Int(f.expires_at), Int(f.deleted_at)};
}

constexpr const char* kBatchCols =
    "id, tenant_id, key_id, endpoint, input_file_id, completion_window, status, metadata, errors, "
    "output_file_id, error_file_id, total, completed, failed, created_at, expires_at, in_progress_at, "
    "finalizing_at, completed_at, failed_at, expired_at, cancelling_at, cancelled_at";

Result<BatchRecord> BatchOf(const SqlRow& r) {
  BatchRecord b;
  b.id = SqlText(r[0]);
  b.tenant_id = SqlText(r[1]);
  b.key_id = SqlText(r[2]);
  b.endpoint = SqlText(r[3]);
  b.input_file_id = SqlText(r[4]);
  b.completion_window = SqlText(r[5]);
  PAGODA_ASSIGN_OR_RETURN(b.status, ParseBatchStatus(SqlText(r[6])));
  b.metadata = SqlText(r[7]);
  b.errors = SqlText(r[8]);
  b.output_file_id = SqlText(r[9]);
  b.error_file_id = SqlText(r[10]);
  b.counts = {SqlInt(r[11]), SqlInt(r[12]), SqlInt(r[13])};
  b.created_at = SqlInt(r[14]);
  b.expires_at = SqlInt(r[15]);
  b.in_progress_at = SqlInt(r[16]);
  b.finalizing_at = SqlInt(r[17]);
  b.completed_at = SqlInt(r[18]);
  b.failed_at = SqlInt(r[19]);
  b.expired_at = SqlInt(r[20]);
  b.cancelling_at = SqlInt(r[21]);
  b.cancelled_at = SqlInt(r[22]);
  return b;
}

constexpr const char* kLineCols =
    "line_no, custom_id, state, offset_bytes, length_bytes, status_code, result_offset, result_length, request_id";

Result<LineRecord> LineOf(const SqlRow& r) {
  LineRecord l;
  l.line_no = SqlInt(r[0]);
  l.custom_id = SqlText(r[1]);
  PAGODA_ASSIGN_OR_RETURN(l.state, ParseLineState(SqlText(r[2])));
  l.offset = SqlInt(r[3]);
  l.length = SqlInt(r[4]);
  l.status_code = static_cast<int>(SqlInt(r[5]));
  l.result_offset = SqlInt(r[6]);
  l.result_length = SqlInt(r[7]);
  l.request_id = SqlText(r[8]);
  return l;
}

// The column that records when a batch reached `s`.
const char* TimeColumn(BatchStatus s) {
  switch (s) {
    case BatchStatus::kValidating:
      return "created_at";
    case BatchStatus::kInProgress:
      return "in_progress_at";
    case BatchStatus::kFinalizing:
      return "finalizing_at";
    case BatchStatus::kCompleted:
      return "completed_at";
    case BatchStatus::kFailed:
      return "failed_at";
    case BatchStatus::kExpired:
      return "expired_at";
    case BatchStatus::kCancelling:
      return "cancelling_at";
    case BatchStatus::kCancelled:
      return "cancelled_at";
  }
  return "failed_at";
}

Status Context(const std::string& store, const char* op, const Status& st) {
  return st.ok() ? st : st.WithContext(store + ": " + op);
}

// Cursor pagination, newest first: rows older than `after` (by created_at,
// then id), limit + 1 rows so the caller knows whether more follow.
void AppendPage(const char* table, const ListPage& page, std::string* sql, Params* p) {
  if (!page.after.empty()) {
    *sql += std::string(" AND (created_at, id) < (SELECT created_at, id FROM ") + table + " WHERE id = ?)";
    p->push_back(Text(page.after));
  }
  *sql += " ORDER BY created_at DESC, id DESC LIMIT ?";
  p->push_back(Int(page.limit + 1));
}

}  // namespace

Result<std::unique_ptr<BatchStore>> BatchStore::Open(const std::string& url, const tenancy::StoreOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(auto db, tenancy::OpenStoreDatabase(url, options));
  return std::make_unique<BatchStore>(std::move(db));
}

BatchStore::BatchStore(std::unique_ptr<tenancy::SqlDatabase> db) : db_(std::move(db)) {}

Status BatchStore::CreateFile(const FileRecord& f) {
  std::string sql = std::string("INSERT INTO batch_files (") + kFileCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
  const Params p = FileParams(f);
  return Context(Describe(), "CreateFile", db_->Transact(true, [&](SqlConnection& c) { return c.Exec(sql, p).status(); }));
}

Result<FileRecord> BatchStore::GetFile(std::string_view tenant_id, std::string_view id) {
  const Params p{Text(tenant_id), Text(id)};
  auto rows = db_->Query(std::string("SELECT ") + kFileCols +
                             " FROM batch_files WHERE tenant_id = ? AND id = ? AND deleted_at = 0",
                         p);
  if (!rows.ok()) return Context(Describe(), "GetFile", rows.status());
  if (rows->empty()) return NotFound("No such File object: " + std::string(id));
  return FileOf((*rows)[0]);
}

Result<std::vector<FileRecord>> BatchStore::ListFiles(std::string_view tenant_id, std::string_view purpose,
                                                      const ListPage& page) {
  std::string sql = std::string("SELECT ") + kFileCols + " FROM batch_files WHERE tenant_id = ? AND deleted_at = 0";
  Params p{Text(tenant_id)};
  if (!purpose.empty()) {
    sql += " AND purpose = ?";
    p.push_back(Text(purpose));
  }
  AppendPage("batch_files", page, &sql, &p);
  auto rows = db_->Query(sql, p);
  if (!rows.ok()) return Context(Describe(), "ListFiles", rows.status());
  std::vector<FileRecord> out;
  for (const SqlRow& r : *rows) out.push_back(FileOf(r));
  return out;
}

Status BatchStore::MarkFileDeleted(std::string_view tenant_id, std::string_view id, int64_t now_ms) {
  Status st = db_->Transact(true, [&](SqlConnection& c) -> Status {
    const Params p{Int(now_ms), Text(tenant_id), Text(id)};
    PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("UPDATE batch_files SET deleted_at = ? WHERE tenant_id = ? AND id = ? "
                                              "AND deleted_at = 0 RETURNING id",
                                              p));
    if (rows.empty()) return NotFound("No such File object: " + std::string(id));
    return Status::Ok();
  });
  return st.code() == StatusCode::kNotFound ? st : Context(Describe(), "MarkFileDeleted", st);
}

Result<std::vector<FileRecord>> BatchStore::ExpiredFiles(int64_t now_ms, int64_t limit) {
  const Params p{Int(now_ms), Int(limit)};
  auto rows = db_->Query(std::string("SELECT ") + kFileCols +
                             " FROM batch_files WHERE deleted_at = 0 AND expires_at > 0 AND expires_at <= ? "
                             "ORDER BY expires_at LIMIT ?",
                         p);
  if (!rows.ok()) return Context(Describe(), "ExpiredFiles", rows.status());
  std::vector<FileRecord> out;
  for (const SqlRow& r : *rows) out.push_back(FileOf(r));
  return out;
}

Status BatchStore::CreateBatch(const BatchRecord& b) {
  const std::string sql = std::string("INSERT INTO batches (") + kBatchCols +
                          ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  const Params p{Text(b.id),
                 Text(b.tenant_id),
                 Text(b.key_id),
                 Text(b.endpoint),
                 Text(b.input_file_id),
                 Text(b.completion_window),
                 Text(BatchStatusName(b.status)),
                 Text(b.metadata),
                 Text(b.errors),
                 Text(b.output_file_id),
                 Text(b.error_file_id),
                 Int(b.counts.total),
                 Int(b.counts.completed),
                 Int(b.counts.failed),
                 Int(b.created_at),
                 Int(b.expires_at),
                 Int(b.in_progress_at),
                 Int(b.finalizing_at),
                 Int(b.completed_at),
                 Int(b.failed_at),
                 Int(b.expired_at),
                 Int(b.cancelling_at),
                 Int(b.cancelled_at)};
  return Context(Describe(), "CreateBatch",
                 db_->Transact(true, [&](SqlConnection& c) { return c.Exec(sql, p).status(); }));
}

Result<BatchRecord> BatchStore::GetBatch(std::string_view tenant_id, std::string_view id) {
  const Params p{Text(tenant_id), Text(id)};
  auto rows = db_->Query(std::string("SELECT ") + kBatchCols + " FROM batches WHERE tenant_id = ? AND id = ?", p);
  if (!rows.ok()) return Context(Describe(), "GetBatch", rows.status());
  if (rows->empty()) return NotFound("No such Batch object: " + std::string(id));
  return BatchOf((*rows)[0]);
}

Result<BatchRecord> BatchStore::GetBatchById(std::string_view id) {
  const Params p{Text(id)};
  auto rows = db_->Query(std::string("SELECT ") + kBatchCols + " FROM batches WHERE id = ?", p);
  if (!rows.ok()) return Context(Describe(), "GetBatch", rows.status());
  if (rows->empty()) return NotFound("No such Batch object: " + std::string(id));
  return BatchOf((*rows)[0]);
}

Result<std::vector<BatchRecord>> BatchStore::ListBatches(std::string_view tenant_id, const ListPage& page) {
  std::string sql = std::string("SELECT ") + kBatchCols + " FROM batches WHERE tenant_id = ?";
  Params p{Text(tenant_id)};
  AppendPage("batches", page, &sql, &p);
  auto rows = db_->Query(sql, p);
  if (!rows.ok()) return Context(Describe(), "ListBatches", rows.status());
  std::vector<BatchRecord> out;
  for (const SqlRow& r : *rows) {
    PAGODA_ASSIGN_OR_RETURN(auto b, BatchOf(r));
    out.push_back(std::move(b));
  }
  return out;
}

Result<std::vector<BatchRecord>> BatchStore::ActiveBatches() {
  auto rows = db_->Query(std::string("SELECT ") + kBatchCols +
                         " FROM batches WHERE status IN ('validating', 'in_progress', 'finalizing', 'cancelling') "
                         "ORDER BY created_at, id");
  if (!rows.ok()) return Context(Describe(), "ActiveBatches", rows.status());
  std::vector<BatchRecord> out;
  for (const SqlRow& r : *rows) {
    PAGODA_ASSIGN_OR_RETURN(auto b, BatchOf(r));
    out.push_back(std::move(b));
  }
  return out;
}

Status BatchStore::StartBatch(std::string_view batch_id, std::span<const LineRecord> lines,
                              const RequestCounts& counts, int64_t now_ms) {
  constexpr size_t kRowsPerStatement = 64;
  Status st = db_->Transact(true, [&](SqlConnection& c) -> Status {
    const Params head{Int(counts.total), Int(counts.failed), Int(now_ms), Text(batch_id)};
    PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("UPDATE batches SET status = 'in_progress', total = ?, completed = 0, "
                                              "failed = ?, in_progress_at = ? WHERE id = ? AND status = 'validating' "
                                              "RETURNING id",
                                              head));
    if (rows.empty()) return FailedPrecondition("batch is no longer validating");
    Params p;
    for (size_t begin = 0; begin < lines.size(); begin += kRowsPerStatement) {
      const size_t n = std::min(kRowsPerStatement, lines.size() - begin);
      std::string sql = std::string("INSERT INTO batch_lines (batch_id, ") + kLineCols + ") VALUES ";
      p.clear();
      for (size_t i = 0; i < n; ++i) {
        const LineRecord& l = lines[begin + i];
        sql += i ? ", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" : "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
        p.insert(p.end(), {Text(batch_id), Int(l.line_no), Text(l.custom_id), Text(LineStateName(l.state)),
                           Int(l.offset), Int(l.length), Int(l.status_code), Int(l.result_offset),
                           Int(l.result_length), Text(l.request_id)});
      }
      PAGODA_RETURN_IF_ERROR(c.Exec(sql, p).status());
    }
    return Status::Ok();
  });
  return Context(Describe(), "StartBatch", st);
}

Result<bool> BatchStore::Transition(std::string_view batch_id, std::span<const BatchStatus> from, BatchStatus to,
                                    int64_t now_ms) {
  std::string sql = std::string("UPDATE batches SET status = ?, ") + TimeColumn(to) + " = ? WHERE id = ? AND status IN (";
  Params p{Text(BatchStatusName(to)), Int(now_ms), Text(batch_id)};
  for (size_t i = 0; i < from.size(); ++i) {
    sql += i ? ", ?" : "?";
    p.push_back(Text(BatchStatusName(from[i])));
  }
  sql += ") RETURNING id";
  bool changed = false;
  Status st = db_->Transact(true, [&](SqlConnection& c) -> Status {
    PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec(sql, p));
    changed = !rows.empty();
    return Status::Ok();
  });
  if (!st.ok()) return Context(Describe(), "Transition", st);
  return changed;
}

Result<BatchRecord> BatchStore::Cancel(std::string_view tenant_id, std::string_view id, int64_t now_ms) {
  PAGODA_ASSIGN_OR_RETURN(BatchRecord b, GetBatch(tenant_id, id));
  if (b.status == BatchStatus::kCancelling || b.status == BatchStatus::kCancelled) return b;
  if (b.status != BatchStatus::kValidating && b.status != BatchStatus::kInProgress) {
    return FailedPrecondition("Cannot cancel a batch with status '" + std::string(BatchStatusName(b.status)) + "'.");
  }
  const BatchStatus from[] = {BatchStatus::kValidating, BatchStatus::kInProgress};
  PAGODA_ASSIGN_OR_RETURN(bool changed, Transition(id, from, BatchStatus::kCancelling, now_ms));
  PAGODA_ASSIGN_OR_RETURN(b, GetBatch(tenant_id, id));
  if (!changed && b.status != BatchStatus::kCancelling && b.status != BatchStatus::kCancelled) {
    return FailedPrecondition("Cannot cancel a batch with status '" + std::string(BatchStatusName(b.status)) + "'.");
  }
  return b;
}

Status BatchStore::Fail(std::string_view batch_id, std::string_view errors_json, int64_t now_ms) {
  const Params p{Text(errors_json), Int(now_ms), Text(batch_id)};
  return Context(Describe(), "Fail", db_->Transact(true, [&](SqlConnection& c) {
    return c.Exec("UPDATE batches SET status = 'failed', errors = ?, failed_at = ? WHERE id = ?", p).status();
  }));
}

Result<std::vector<LineRecord>> BatchStore::PendingLines(std::string_view batch_id, int64_t after, int64_t limit) {
  const Params p{Text(batch_id), Int(after), Int(limit)};
  auto rows = db_->Query(std::string("SELECT ") + kLineCols +
                             " FROM batch_lines WHERE batch_id = ? AND state = 'pending' AND line_no > ? "
                             "ORDER BY line_no LIMIT ?",
                         p);
  if (!rows.ok()) return Context(Describe(), "PendingLines", rows.status());
  std::vector<LineRecord> out;
  for (const SqlRow& r : *rows) {
    PAGODA_ASSIGN_OR_RETURN(auto l, LineOf(r));
    out.push_back(std::move(l));
  }
  return out;
}

Result<std::vector<LineRecord>> BatchStore::Lines(std::string_view batch_id, int64_t after, int64_t limit) {
  const Params p{Text(batch_id), Int(after), Int(limit)};
  auto rows = db_->Query(std::string("SELECT ") + kLineCols +
                             " FROM batch_lines WHERE batch_id = ? AND line_no > ? ORDER BY line_no LIMIT ?",
                         p);
  if (!rows.ok()) return Context(Describe(), "Lines", rows.status());
  std::vector<LineRecord> out;
  for (const SqlRow& r : *rows) {
    PAGODA_ASSIGN_OR_RETURN(auto l, LineOf(r));
    out.push_back(std::move(l));
  }
  return out;
}

Result<int64_t> BatchStore::CommitLines(std::string_view batch_id, std::span<const LineCommit> lines) {
  int64_t fresh = 0;
  Status st = db_->Transact(true, [&](SqlConnection& c) -> Status {
    fresh = 0;
    int64_t done = 0, failed = 0;
    std::vector<tenancy::UsageRecord> usage;
    for (const LineCommit& l : lines) {
      const Params p{Text(LineStateName(l.state)), Int(l.status_code), Int(l.result_offset), Int(l.result_length),
                     Text(batch_id), Int(l.line_no)};
      PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("UPDATE batch_lines SET state = ?, status_code = ?, result_offset = ?, "
                                                "result_length = ? "
                                                "WHERE batch_id = ? AND line_no = ? AND state = 'pending' "
                                                "RETURNING line_no",
                                                p));
      if (rows.empty()) continue;  // committed before: the first answer stands
      ++fresh;
      (l.state == LineState::kDone ? done : failed) += 1;
      if (l.usage) usage.push_back(*l.usage);
    }
    if (fresh == 0) return Status::Ok();
    const Params p{Int(done), Int(failed), Text(batch_id)};
    PAGODA_RETURN_IF_ERROR(
        c.Exec("UPDATE batches SET completed = completed + ?, failed = failed + ? WHERE id = ?", p).status());
    return tenancy::InsertUsageRecords(c, usage);
  });
  if (!st.ok()) return Context(Describe(), "CommitLines", st);
  return fresh;
}

Status BatchStore::Finish(std::string_view batch_id, const std::optional<FileRecord>& output,
                          const std::optional<FileRecord>& errors, BatchStatus final_status, int64_t now_ms) {
  const std::string insert = std::string("INSERT INTO batch_files (") + kFileCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
  Status st = db_->Transact(true, [&](SqlConnection& c) -> Status {
    for (const auto* f : {&output, &errors}) {
      if (*f) PAGODA_RETURN_IF_ERROR(c.Exec(insert, FileParams(**f)).status());
    }
    const Params p{Text(BatchStatusName(final_status)),
                   Int(now_ms),
                   Text(output ? output->id : std::string()),
                   Text(errors ? errors->id : std::string()),
                   Text(batch_id)};
    return c.Exec(std::string("UPDATE batches SET status = ?, ") + TimeColumn(final_status) +
                      " = ?, output_file_id = ?, error_file_id = ? WHERE id = ?",
                  p)
        .status();
  });
  return Context(Describe(), "Finish", st);
}

}  // namespace pagoda::batch
