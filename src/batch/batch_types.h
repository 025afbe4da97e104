// Records of the Files and Batch APIs (OpenAI's shapes, docs/BATCH.md):
// plain values shared by the store, the runner and the routes. Times are
// unix milliseconds in the store (0 = unset) and unix seconds on the wire.
//
// Zero retention by type: no record holds a prompt or a completion. A file's
// bytes live only in the data directory (file_store.h); a line row holds
// where its request is in the input file and where its answer is in the
// batch's results file (also in the data directory, removed once the output
// and error files are written).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace pagoda::batch {

enum class BatchStatus {
  kValidating,  // the input file is being checked, line by line
  kInProgress,  // lines are being answered
  kFinalizing,  // every line is answered; output and error files are being written
  kCompleted,
  kFailed,      // the input could not be used at all (missing file, no valid line ... )
  kExpired,     // the completion window ran out; answered lines are in the output
  kCancelling,  // cancel asked: lines in flight end, none start
  kCancelled,
};
const char* BatchStatusName(BatchStatus s);  // OpenAI's: "validating", "in_progress", ...
Result<BatchStatus> ParseBatchStatus(std::string_view name);
bool IsTerminal(BatchStatus s);  // completed, failed, expired, cancelled

struct FileRecord {
  std::string id;         // "file-<24 hex>"
  std::string tenant_id;  // "" without a control plane
  std::string purpose;    // "batch" (uploads), "batch_output" (outputs and error files)
  std::string filename;   // as uploaded (validated: printable, <= 255 bytes)
  int64_t bytes = 0;
  int64_t lines = 0;      // non-empty lines (batch input)
  int64_t created_at = 0;
  int64_t expires_at = 0;  // 0: never
  int64_t deleted_at = 0;  // 0: live
};

struct RequestCounts {
  int64_t total = 0;      // non-empty lines of the input
  int64_t completed = 0;  // answered 2xx (output file)
  int64_t failed = 0;     // invalid, or answered otherwise (error file)
};

struct BatchRecord {
  std::string id;  // "batch_<24 hex>"
  std::string tenant_id;
  std::string key_id;  // the key that created it: its lines run as that key
  std::string endpoint;  // "/v1/chat/completions" | "/v1/completions"
  std::string input_file_id;
  std::string completion_window = "24h";
  BatchStatus status = BatchStatus::kValidating;
  std::string metadata = "null";  // JSON object (<= 16 string pairs) or null
  std::string errors = "null";    // JSON: OpenAI's errors list, for a failed batch
  std::string output_file_id;
  std::string error_file_id;
  RequestCounts counts;
  int64_t created_at = 0;
  int64_t expires_at = 0;
  int64_t in_progress_at = 0;
  int64_t finalizing_at = 0;
  int64_t completed_at = 0;
  int64_t failed_at = 0;
  int64_t expired_at = 0;
  int64_t cancelling_at = 0;
  int64_t cancelled_at = 0;
};

enum class LineState { kPending, kDone, kError };
const char* LineStateName(LineState s);  // "pending" | "done" | "error"
Result<LineState> ParseLineState(std::string_view name);

// One input line. Its answer (the output line when done, the error line on
// error, in OpenAI's line format) is bytes [result_offset, + result_length)
// of the batch's results file.
struct LineRecord {
  int64_t line_no = 0;  // 1-based line of the input file
  std::string custom_id;
  LineState state = LineState::kPending;
  int64_t offset = 0;  // the line's bytes in the input file
  int64_t length = 0;
  int status_code = 0;
  int64_t result_offset = -1;  // -1: not answered
  int64_t result_length = 0;
  std::string request_id;  // "batch_req_<hex>": the line's id in outputs and the usage ledger
};

// Cursor pagination (after / limit), newest first as OpenAI lists.
struct ListPage {
  std::string after;  // an id from the previous page ("" = first page)
  int64_t limit = 20;
};

}  // namespace pagoda::batch
