// BatchService: OpenAI's Files and Batch APIs for one process (`pagoda
// serve` or `pagoda gateway`): uploads into the data directory, batches in
// the store, and the runner that answers their lines.
//
// The runner (one thread) keeps up to `lines_in_flight` lines running
// through the LineExecutor, lowest line first across the active batches in
// turn, so the engine (or the gateway's replicas) stay saturated while it has
// work; batch lines run in the batch workload class, so the engine gives
// them only what real-time and interactive traffic leave free. Each answer
// is committed once (batch_store.h): after a crash or restart the runner
// resumes every batch that was not finished from its pending lines, and a
// line that was answered but not committed runs again and is committed once.
// Lines the engine turns away for now (429, 503) wait and run again; they
// never fail because the server was busy.
//
// Statuses: validating (the runner checks the input file line by line: a bad
// line goes to the error file and fails only itself) -> in_progress ->
// finalizing (output and error files written) -> completed. Cancel:
// cancelling (lines in flight end, none start; the rest go to the error file
// as batch_cancelled) -> cancelled with partial results. The completion
// window passing: the same, batch_expired -> expired.
//
// Thread-safe: the routes call from I/O threads; answers arrive on any.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/generation_options.h"
#include "base/status.h"
#include "batch/batch_store.h"
#include "batch/file_store.h"
#include "batch/line_executor.h"

namespace pagoda::batch {

struct BatchOptions {
  int64_t max_file_bytes = 100ll << 20;  // an upload above: 413
  int64_t max_lines = 50'000;            // requests in one input file
  int lines_in_flight = 64;              // lines running at once (all batches)
  std::chrono::seconds file_ttl{30 * 24 * 3600};  // uploads and outputs; 0 = kept until deleted
  std::chrono::seconds completion_window{24 * 3600};  // "24h": the only window offered
  std::chrono::milliseconds poll{250};   // how often the runner looks at the store
  api::RequestLimits limits;             // bodies are checked as the endpoints would
  // Write a usage record per answered line (a control plane meters this
  // process), with `deployment` as its deployment.
  bool meter_usage = false;
  std::string deployment;
  std::function<int64_t()> now_ms;       // unix ms; system clock when empty
};

// Who is asking: every file and batch belongs to one tenant.
struct Owner {
  std::string tenant_id;  // "" without a control plane
  std::string key_id;
};

class BatchService {
 public:
  BatchService(BatchOptions options, std::unique_ptr<BatchStore> store, FileStore files,
               std::unique_ptr<LineExecutor> executor);
  ~BatchService();
  BatchService(const BatchService&) = delete;
  BatchService& operator=(const BatchService&) = delete;

  void Start();
  // Starts no more lines, waits up to `drain` for those in flight and
  // commits their answers; later answers are dropped (their lines stay
  // pending and run after the restart). Idempotent.
  void Stop(std::chrono::milliseconds drain);

  // Files API.
  Result<FileRecord> Upload(const Owner& owner, std::string filename, std::string purpose, std::string bytes);
  Result<FileRecord> GetFile(const Owner& owner, std::string_view id);
  Result<std::string> FileContent(const Owner& owner, std::string_view id);
  Status DeleteFile(const Owner& owner, std::string_view id);
  BatchStore& store() { return *store_; }

  // Batch API. CreateBatch checks the request (endpoint, window, metadata,
  // the input file: the owner's, purpose "batch"); the runner checks lines.
  Result<BatchRecord> CreateBatch(const Owner& owner, std::string_view input_file_id, std::string_view endpoint,
                                  std::string_view completion_window, std::string metadata_json);
  Result<BatchRecord> Cancel(const Owner& owner, std::string_view id);

  const BatchOptions& options() const { return options_; }
  int64_t NowMs() const;
  // pagoda_batch_* (Prometheus text).
  std::string RenderMetrics() const;

 private:
  struct Active;  // a batch the runner is working on
  struct Answer {
    std::string batch_id;
    int64_t line_no = 0;
    LineAnswer answer;
    int64_t started_ms = 0;
  };

  void Run();
  void Tick();
  void CommitAnswers();
  void Validate(Active& a);
  void Dispatch();
  void DispatchLine(Active& a, const LineRecord& line);
  void Finalize(Active& a, BatchStatus final_status);
  // Fails every pending line of `a` with an error line (cancelled, expired).
  Status FailPending(Active& a, const char* code, const char* message);
  // Appends the answers' lines to the batch's results file and fills in
  // their offsets.
  Status AppendResults(const std::string& batch_id, std::vector<std::pair<LineCommit, std::string>>& answers,
                       std::vector<LineCommit>* out);
  void ExpireFiles();
  Status LoadInput(Active& a);

  BatchOptions options_;
  std::unique_ptr<BatchStore> store_;
  FileStore files_;
  std::unique_ptr<LineExecutor> executor_;

  // What answer callbacks touch: shared with them, so an answer that
  // arrives after the service is gone lands here harmlessly.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Answer> answers;
    bool stop = false;
    bool draining = false;  // no new lines
    bool wake = false;
    int in_flight = 0;
  };
  std::shared_ptr<Shared> sh_ = std::make_shared<Shared>();

  // Runner thread only.
  std::map<std::string, std::unique_ptr<Active>> active_;
  std::string next_batch_;  // round robin cursor
  int64_t last_expiry_scan_ms_ = 0;

  std::thread thread_;
  struct Metrics;
  std::unique_ptr<Metrics> metrics_;
};

}  // namespace pagoda::batch
