#include "batch/batch_service.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "base/prometheus_text.h"
#include "base/workload_class.h"
#include "batch/batch_json.h"
#include "batch/input_lines.h"
#include "tenancy/api_key.h"

namespace pagoda::batch {
namespace {

using nlohmann::json;

// Output and error files get ids derived from their batch, so a finalization
// that runs again after a crash rewrites the same files instead of leaving
// orphans behind.
std::string OutputFileId(const std::string& batch_id, const char* kind) {
  return "file-" + batch_id.substr(batch_id.find('_') + 1) + "-" + kind;
}

// Each batch's answers, appended as they come (data directory, not the store).
std::string ResultsFileId(const std::string& batch_id) { return "results-" + batch_id; }

bool ValidFilename(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return false;
  }
  return true;
}

Status CheckMetadata(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return InvalidArgument("metadata must be a JSON object");
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return InvalidArgument("metadata must be an object of string values");
  if (j.size() > 16) return InvalidArgument("metadata may have at most 16 keys");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key().size() > 64) return InvalidArgument("metadata keys may be at most 64 characters");
    if (!it.value().is_string()) return InvalidArgument("metadata values must be strings");
    if (it.value().get_ref<const std::string&>().size() > 512) {
      return InvalidArgument("metadata values may be at most 512 characters");
    }
  }
  return Status::Ok();
}

// Seconds of a Retry-After header (1 when absent or unreadable), at most 60.
int64_t RetryAfterMs(const std::string& header) {
  int64_t s = 1;
  if (!header.empty()) {
    char* end = nullptr;
    const long v = std::strtol(header.c_str(), &end, 10);
    if (end != header.c_str() && v > 0) s = v;
  }
  return std::min<int64_t>(s, 60) * 1000;
}

}  // namespace

struct BatchService::Metrics {
  std::atomic<int64_t> lines_done{0};
  std::atomic<int64_t> lines_failed{0};
  std::atomic<int64_t> lines_retried{0};
  std::atomic<int64_t> commits{0};
  std::atomic<int64_t> commit_ns{0};
  std::atomic<int64_t> batches_finished{0};
  std::atomic<int64_t> active{0};
  std::atomic<int64_t> store_errors{0};
};

struct BatchService::Active {
  BatchRecord record;
  std::string input;  // the input file's bytes while lines run
  bool input_loaded = false;
  std::deque<LineRecord> todo;        // fetched pending lines not yet started
  int64_t cursor = 0;                 // last line fetched into todo
  bool fetched_all = false;           // no pending line after cursor
  std::map<int64_t, LineRecord> in_flight;
  std::map<int64_t, std::pair<int64_t, LineRecord>> retry;  // line -> (not before ms, line)
  std::vector<LineCommit> uncommitted;  // appended answers whose commit failed (store down): tried again
  std::vector<std::pair<LineCommit, std::string>> unwritten;  // answers not yet in the results file
  bool seen = true;  // in the last ActiveBatches() read
};

BatchService::BatchService(BatchOptions options, std::unique_ptr<BatchStore> store, FileStore files,
                           std::unique_ptr<LineExecutor> executor)
    : options_(std::move(options)),
      store_(std::move(store)),
      files_(std::move(files)),
      executor_(std::move(executor)),
      metrics_(std::make_unique<Metrics>()) {
  options_.lines_in_flight = std::max(1, options_.lines_in_flight);
}

BatchService::~BatchService() { Stop(std::chrono::milliseconds(0)); }

int64_t BatchService::NowMs() const {
  if (options_.now_ms) return options_.now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void BatchService::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void BatchService::Stop(std::chrono::milliseconds drain) {
  {
    std::unique_lock<std::mutex> lock(sh_->mu);
    if (!thread_.joinable()) return;
    sh_->draining = true;
    sh_->cv.notify_all();
    // Answers keep being committed by the runner while lines drain.
    sh_->cv.wait_for(lock, drain, [&] { return sh_->in_flight == 0; });
    sh_->stop = true;
    sh_->cv.notify_all();
  }
  thread_.join();
}

// --- Files -----------------------------------------------------------------

Result<FileRecord> BatchService::Upload(const Owner& owner, std::string filename, std::string purpose,
                                        std::string bytes) {
  if (purpose != "batch") {
    return InvalidArgument("purpose must be \"batch\" (the only purpose this server accepts uploads for)");
  }
  if (!ValidFilename(filename)) return InvalidArgument("file: a filename of 1 to 255 printable characters is required");
  if (static_cast<int64_t>(bytes.size()) > options_.max_file_bytes) {
    return ResourceExhausted("file is " + std::to_string(bytes.size()) + " bytes; the limit is " +
                             std::to_string(options_.max_file_bytes));
  }
  int64_t lines = 0;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t end = bytes.find('\n', pos);
    if (end == std::string::npos) end = bytes.size();
    if (std::string_view(bytes).substr(pos, end - pos).find_first_not_of(" \t\r") != std::string_view::npos) ++lines;
    pos = end + 1;
  }
  if (lines == 0) return InvalidArgument("file: the batch input file is empty");
  if (lines > options_.max_lines) {
    return InvalidArgument("file has " + std::to_string(lines) + " requests; a batch may have at most " +
                           std::to_string(options_.max_lines));
  }
  FileRecord f;
  PAGODA_ASSIGN_OR_RETURN(f.id, tenancy::RandomId("file-", 12));
  f.tenant_id = owner.tenant_id;
  f.purpose = std::move(purpose);
  f.filename = std::move(filename);
  f.bytes = static_cast<int64_t>(bytes.size());
  f.lines = lines;
  f.created_at = NowMs();
  f.expires_at = options_.file_ttl.count() ? f.created_at + options_.file_ttl.count() * 1000 : 0;
  // Bytes first: a record never points at contents that are not there.
  PAGODA_RETURN_IF_ERROR(files_.Put(f.id, bytes));
  if (Status st = store_->CreateFile(f); !st.ok()) {
    (void)files_.Remove(f.id);
    return st;
  }
  return f;
}

Result<FileRecord> BatchService::GetFile(const Owner& owner, std::string_view id) {
  return store_->GetFile(owner.tenant_id, id);
}

Result<std::string> BatchService::FileContent(const Owner& owner, std::string_view id) {
  PAGODA_ASSIGN_OR_RETURN(FileRecord f, store_->GetFile(owner.tenant_id, id));
  return files_.Get(f.id);
}

Status BatchService::DeleteFile(const Owner& owner, std::string_view id) {
  PAGODA_RETURN_IF_ERROR(store_->MarkFileDeleted(owner.tenant_id, id, NowMs()));
  return files_.Remove(id);
}

// --- Batches ---------------------------------------------------------------

Result<BatchRecord> BatchService::CreateBatch(const Owner& owner, std::string_view input_file_id,
                                              std::string_view endpoint, std::string_view completion_window,
                                              std::string metadata_json) {
  if (!IsBatchEndpoint(endpoint)) {
    return InvalidArgument("endpoint must be /v1/chat/completions or /v1/completions");
  }
  if (completion_window != "24h") return InvalidArgument("completion_window must be \"24h\"");
  if (metadata_json.empty()) metadata_json = "null";
  PAGODA_RETURN_IF_ERROR(CheckMetadata(metadata_json));
  PAGODA_ASSIGN_OR_RETURN(FileRecord f, store_->GetFile(owner.tenant_id, input_file_id));
  if (f.purpose != "batch") return InvalidArgument("input_file_id: the file's purpose must be \"batch\"");
  BatchRecord b;
  PAGODA_ASSIGN_OR_RETURN(b.id, tenancy::RandomId("batch_", 12));
  b.tenant_id = owner.tenant_id;
  b.key_id = owner.key_id;
  b.endpoint = std::string(endpoint);
  b.input_file_id = f.id;
  b.completion_window = std::string(completion_window);
  b.status = BatchStatus::kValidating;
  b.metadata = std::move(metadata_json);
  b.counts.total = f.lines;
  b.created_at = NowMs();
  b.expires_at = b.created_at + options_.completion_window.count() * 1000;
  PAGODA_RETURN_IF_ERROR(store_->CreateBatch(b));
  {
    std::lock_guard<std::mutex> lock(sh_->mu);
    sh_->wake = true;
  }
  sh_->cv.notify_all();
  return b;
}

Result<BatchRecord> BatchService::Cancel(const Owner& owner, std::string_view id) {
  auto b = store_->Cancel(owner.tenant_id, id, NowMs());
  {
    std::lock_guard<std::mutex> lock(sh_->mu);
    sh_->wake = true;
  }
  sh_->cv.notify_all();
  return b;
}

// --- The runner --------------------------------------------------------------

void BatchService::Run() {
  pthread_setname_np(pthread_self(), "pagoda-batch");  // for per-thread CPU figures (bench/batch_bench.mjs)
  std::unique_lock<std::mutex> lock(sh_->mu);
  while (!sh_->stop) {
    lock.unlock();
    Tick();
    lock.lock();
    if (sh_->stop) break;
    sh_->cv.wait_for(lock, options_.poll, [&] { return sh_->stop || sh_->wake || !sh_->answers.empty(); });
    sh_->wake = false;
  }
  lock.unlock();
  CommitAnswers();  // what came in during the drain
}

void BatchService::Tick() {
  CommitAnswers();
  const int64_t now = NowMs();
  auto batches = store_->ActiveBatches();
  if (!batches.ok()) {
    ++metrics_->store_errors;
    PAGODA_LOG(Warning) << "batch runner: " << batches.status().message();
    return;
  }
  for (auto& [id, a] : active_) a->seen = false;
  for (BatchRecord& b : *batches) {
    auto& slot = active_[b.id];
    if (!slot) slot = std::make_unique<Active>();
    slot->record = std::move(b);
    slot->seen = true;
  }
  std::erase_if(active_, [](const auto& kv) { return !kv.second->seen && kv.second->in_flight.empty(); });
  metrics_->active = static_cast<int64_t>(active_.size());

  bool draining;
  {
    std::lock_guard<std::mutex> lock(sh_->mu);
    draining = sh_->draining;
  }
  std::vector<std::string> done;
  for (auto& [id, ap] : active_) {
    Active& a = *ap;
    if (!a.seen) continue;
    BatchRecord& b = a.record;
    if (draining) continue;
    const bool expired = now >= b.expires_at;
    if (b.status == BatchStatus::kValidating && !expired) {
      Validate(a);
      continue;
    }
    if (b.status == BatchStatus::kFinalizing) {
      Finalize(a, BatchStatus::kCompleted);
      done.push_back(id);
      continue;
    }
    const bool stopping = b.status == BatchStatus::kCancelling || expired;
    if (stopping) {
      // In-flight lines end; then the rest go to the error file.
      if (!a.in_flight.empty() || !a.uncommitted.empty() || !a.unwritten.empty()) continue;
      const bool cancel = b.status == BatchStatus::kCancelling;
      const char* code = cancel ? "batch_cancelled" : "batch_expired";
      const char* message = cancel ? "the batch was cancelled before this request ran"
                                   : "the batch's completion window ended before this request ran";
      if (Status st = FailPending(a, code, message); !st.ok()) {
        ++metrics_->store_errors;
        PAGODA_LOG(Warning) << "batch runner: " << st.message();
        continue;
      }
      Finalize(a, cancel ? BatchStatus::kCancelled : BatchStatus::kExpired);
      done.push_back(id);
      continue;
    }
    if (b.status == BatchStatus::kInProgress && a.todo.empty() && a.retry.empty() && a.in_flight.empty() &&
        a.uncommitted.empty() && a.unwritten.empty()) {
      auto left = store_->PendingLines(id, 0, 1);
      if (left.ok() && left->empty()) {
        const BatchStatus from[] = {BatchStatus::kInProgress};
        auto moved = store_->Transition(id, from, BatchStatus::kFinalizing, now);
        if (moved.ok() && *moved) {
          b.status = BatchStatus::kFinalizing;
          Finalize(a, BatchStatus::kCompleted);
          done.push_back(id);
        }
      } else if (left.ok()) {
        a.fetched_all = false;
        a.cursor = 0;
      }
    }
  }
  for (const std::string& id : done) {
    if (active_[id]->in_flight.empty()) active_.erase(id);
  }
  if (!draining) Dispatch();
  if (now - last_expiry_scan_ms_ >= 60'000) {
    last_expiry_scan_ms_ = now;
    ExpireFiles();
  }
}

Status BatchService::LoadInput(Active& a) {
  if (a.input_loaded) return Status::Ok();
  auto f = store_->GetFile(a.record.tenant_id, a.record.input_file_id);
  if (!f.ok()) return NotFound("the input file " + a.record.input_file_id + " was deleted");
  auto bytes = files_.Get(a.record.input_file_id);
  if (!bytes.ok()) return bytes.status();
  a.input = std::move(bytes).value();
  a.input_loaded = true;
  return Status::Ok();
}

void BatchService::Validate(Active& a) {
  BatchRecord& b = a.record;
  const int64_t now = NowMs();
  auto fail = [&](const std::string& code, const std::string& message) {
    json errors{{"object", "list"},
                {"data", json::array({json{{"code", code}, {"message", message}, {"param", nullptr}, {"line", nullptr}}})}};
    if (Status st = store_->Fail(b.id, errors.dump(), now); !st.ok()) {
      ++metrics_->store_errors;
      PAGODA_LOG(Warning) << "batch runner: " << st.message();
    }
  };
  if (Status st = LoadInput(a); !st.ok()) return fail("invalid_file", st.message());
  std::vector<CheckedLine> checked = CheckInputLines(a.input, b.endpoint, options_.limits);
  if (checked.empty()) return fail("empty_file", "the input file has no requests");
  if (static_cast<int64_t>(checked.size()) > options_.max_lines) {
    return fail("too_many_requests", "a batch may have at most " + std::to_string(options_.max_lines) + " requests");
  }
  std::vector<LineRecord> lines;
  lines.reserve(checked.size());
  std::string errors_text;
  RequestCounts counts;
  counts.total = static_cast<int64_t>(checked.size());
  for (const CheckedLine& c : checked) {
    LineRecord l;
    l.line_no = c.line_no;
    l.custom_id = c.custom_id;
    l.offset = c.offset;
    l.length = c.length;
    auto request_id = tenancy::RandomId("batch_req_", 12);
    if (!request_id.ok()) return;  // tried again on the next tick
    l.request_id = std::move(request_id).value();
    if (c.valid) {
      l.state = LineState::kPending;
    } else {
      l.state = LineState::kError;
      l.status_code = 400;
      std::string text = ErrorLine(l.request_id, c.custom_id, c.error_code,
                                   "line " + std::to_string(c.line_no) + ": " + c.error_message);
      text += '\n';
      l.result_offset = static_cast<int64_t>(errors_text.size());  // relative until appended
      l.result_length = static_cast<int64_t>(text.size());
      errors_text += text;
      ++counts.failed;
    }
    lines.push_back(std::move(l));
  }
  if (!errors_text.empty()) {
    // A validation that runs again (crash before StartBatch) appends again;
    // only the offsets StartBatch commits are ever read.
    auto base = files_.Append(ResultsFileId(b.id), errors_text);
    if (!base.ok()) {
      ++metrics_->store_errors;
      PAGODA_LOG(Warning) << "batch runner: " << base.status().message();
      return;
    }
    for (LineRecord& l : lines) {
      if (l.state == LineState::kError) l.result_offset += *base;
    }
  }
  if (Status st = store_->StartBatch(b.id, lines, counts, now); !st.ok()) {
    ++metrics_->store_errors;
    PAGODA_LOG(Warning) << "batch runner: " << st.message();
    return;
  }
  metrics_->lines_failed += counts.failed;
  b.status = BatchStatus::kInProgress;
  b.counts = counts;
  b.in_progress_at = now;
}

void BatchService::Dispatch() {
  const int64_t now = NowMs();
  auto room = [&] {
    std::lock_guard<std::mutex> lock(sh_->mu);
    return !sh_->draining && sh_->in_flight < options_.lines_in_flight;
  };
  // Round robin over the running batches, one line each in turn, so one
  // large batch does not hold back a small one behind it.
  for (bool progressed = true; progressed && room();) {
    progressed = false;
    for (auto& [id, ap] : active_) {
      if (!room()) break;
      Active& a = *ap;
      if (a.record.status != BatchStatus::kInProgress || now >= a.record.expires_at) continue;
      // Retries whose wait is over go first.
      std::optional<LineRecord> line;
      for (auto it = a.retry.begin(); it != a.retry.end(); ++it) {
        if (it->second.first <= now) {
          line = std::move(it->second.second);
          a.retry.erase(it);
          break;
        }
      }
      if (!line) {
        if (a.todo.empty() && !a.fetched_all) {
          auto page = store_->PendingLines(id, a.cursor, 256);
          if (!page.ok()) {
            ++metrics_->store_errors;
            continue;
          }
          if (page->empty()) a.fetched_all = true;
          for (LineRecord& l : *page) {
            a.cursor = l.line_no;
            if (!a.in_flight.count(l.line_no) && !a.retry.count(l.line_no)) a.todo.push_back(std::move(l));
          }
        }
        if (a.todo.empty()) continue;
        line = std::move(a.todo.front());
        a.todo.pop_front();
      }
      if (Status st = LoadInput(a); !st.ok()) {
        // The input is gone (deleted, or the data directory lost it): its
        // lines cannot run.
        LineCommit c;
        c.line_no = line->line_no;
        c.state = LineState::kError;
        a.unwritten.emplace_back(std::move(c),
                                 ErrorLine(line->request_id, line->custom_id, "input_file_missing", st.message()));
        progressed = true;
        continue;
      }
      DispatchLine(a, *line);
      progressed = true;
    }
  }
}

void BatchService::DispatchLine(Active& a, const LineRecord& line) {
  LineCall call;
  call.tenant_id = a.record.tenant_id;
  call.key_id = a.record.key_id;
  call.request_id = line.request_id;
  call.url = a.record.endpoint;
  CheckedLine where;
  where.offset = line.offset;
  where.length = line.length;
  call.body = LineBody(a.input, where);
  a.in_flight.emplace(line.line_no, line);
  {
    std::lock_guard<std::mutex> lock(sh_->mu);
    ++sh_->in_flight;
  }
  if (call.body.empty()) {
    // The file changed under us: the line no longer reads as it did.
    Answer ans{a.record.id, line.line_no, LineAnswer{400, R"({"error":{"message":"the input line no longer parses","type":"invalid_request_error","param":null,"code":"invalid_body"}})", ""}, NowMs()};
    std::lock_guard<std::mutex> lock(sh_->mu);
    sh_->answers.push_back(std::move(ans));
    return;
  }
  const int64_t started = NowMs();
  executor_->Execute(call, [sh = sh_, batch_id = a.record.id, line_no = line.line_no, started](LineAnswer answer) {
    {
      std::lock_guard<std::mutex> lock(sh->mu);
      sh->answers.push_back(Answer{batch_id, line_no, std::move(answer), started});
    }
    sh->cv.notify_all();
  });
}

void BatchService::CommitAnswers() {
  std::deque<Answer> answers;
  {
    std::lock_guard<std::mutex> lock(sh_->mu);
    answers.swap(sh_->answers);
  }
  bool draining;
  {
    std::lock_guard<std::mutex> lock(sh_->mu);
    draining = sh_->draining;
  }
  const int64_t now = NowMs();
  std::map<std::string, std::vector<std::pair<LineCommit, std::string>>> fresh;
  int finished = 0;
  for (Answer& ans : answers) {
    ++finished;
    auto ait = active_.find(ans.batch_id);
    if (ait == active_.end()) continue;
    Active& a = *ait->second;
    auto lit = a.in_flight.find(ans.line_no);
    if (lit == a.in_flight.end()) continue;
    LineRecord line = std::move(lit->second);
    a.in_flight.erase(lit);
    const int s = ans.answer.status;
    if (s == 0 || s == 429 || s == 503) {
      // Not answered, or turned away for now: it runs again later; nothing
      // is committed. During a drain it stays pending for the restart.
      ++metrics_->lines_retried;
      if (!draining || s != 0) {
        const int64_t wait = s == 0 ? 1000 : RetryAfterMs(ans.answer.retry_after);
        a.retry.emplace(line.line_no, std::make_pair(now + wait, std::move(line)));
      }
      continue;
    }
    LineCommit c;
    c.line_no = line.line_no;
    c.status_code = s;
    c.state = s >= 200 && s < 300 ? LineState::kDone : LineState::kError;
    std::string text = AnswerLine(line.request_id, line.custom_id, s, ans.answer.body);
    if (c.state == LineState::kDone && options_.meter_usage) {
      json body = json::parse(ans.answer.body, nullptr, false);
      tenancy::UsageRecord u;
      u.request_id = line.request_id;
      u.tenant_id = a.record.tenant_id;
      u.key_id = a.record.key_id;
      u.deployment = options_.deployment;
      u.status = tenancy::UsageStatus::kOk;
      u.http_status = s;
      u.started_at_ms = ans.started_ms;
      u.total_ms = std::max<int64_t>(0, now - ans.started_ms);
      u.service_tier = WorkloadClass::kBatch;
      if (body.is_object()) {
        if (auto m = body.find("model"); m != body.end() && m->is_string()) u.model = m->get<std::string>();
        if (auto usage = body.find("usage"); usage != body.end() && usage->is_object()) {
          u.prompt_tokens = usage->value("prompt_tokens", int64_t{0});
          u.completion_tokens = usage->value("completion_tokens", int64_t{0});
          if (auto d = usage->find("prompt_tokens_details"); d != usage->end() && d->is_object()) {
            u.cached_tokens = d->value("cached_tokens", int64_t{0});
          }
        }
      }
      if (u.model.empty()) u.model = options_.deployment;
      c.usage = std::move(u);
    }
    fresh[ans.batch_id].emplace_back(std::move(c), std::move(text));
  }
  if (finished > 0) {
    std::lock_guard<std::mutex> lock(sh_->mu);
    sh_->in_flight -= finished;
    sh_->cv.notify_all();
  }
  // Refill the engine before the disk and the store: the answers' commit
  // (one sync and one transaction per batch) overlaps the new lines' work.
  if (finished > 0 && !draining) Dispatch();
  std::map<std::string, std::vector<LineCommit>> commits;
  for (auto& [id, ap] : active_) {
    Active& a = *ap;
    auto f = fresh.find(id);
    if (f != fresh.end()) {
      a.unwritten.insert(a.unwritten.end(), std::make_move_iterator(f->second.begin()),
                         std::make_move_iterator(f->second.end()));
    }
    if (!a.unwritten.empty()) {
      if (Status st = AppendResults(id, a.unwritten, &a.uncommitted); !st.ok()) {
        ++metrics_->store_errors;
        PAGODA_LOG(Warning) << "batch runner: " << st.message();
      }
    }
    if (!a.uncommitted.empty()) {
      commits[id] = std::move(a.uncommitted);
      a.uncommitted.clear();
    }
  }
  for (auto& [id, lines] : commits) {
    if (lines.empty()) continue;
    const auto t0 = std::chrono::steady_clock::now();
    auto n = store_->CommitLines(id, lines);
    metrics_->commit_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    ++metrics_->commits;
    if (!n.ok()) {
      // Keep them: committed on a later tick once the store answers.
      ++metrics_->store_errors;
      PAGODA_LOG(Warning) << "batch runner: " << n.status().message();
      auto it = active_.find(id);
      if (it != active_.end()) {
        auto& u = it->second->uncommitted;
        u.insert(u.end(), std::make_move_iterator(lines.begin()), std::make_move_iterator(lines.end()));
      }
      continue;
    }
    for (const LineCommit& c : lines) (c.state == LineState::kDone ? metrics_->lines_done : metrics_->lines_failed) += 1;
  }
}

Status BatchService::AppendResults(const std::string& batch_id,
                                   std::vector<std::pair<LineCommit, std::string>>& answers,
                                   std::vector<LineCommit>* out) {
  std::string bytes;
  for (auto& [c, text] : answers) {
    c.result_offset = static_cast<int64_t>(bytes.size());
    c.result_length = static_cast<int64_t>(text.size()) + 1;
    bytes += text;
    bytes += '\n';
  }
  PAGODA_ASSIGN_OR_RETURN(int64_t base, files_.Append(ResultsFileId(batch_id), bytes));
  for (auto& [c, text] : answers) {
    c.result_offset += base;
    out->push_back(std::move(c));
  }
  answers.clear();
  return Status::Ok();
}

Status BatchService::FailPending(Active& a, const char* code, const char* message) {
  std::vector<std::pair<LineCommit, std::string>> lines;
  int64_t after = 0;
  for (;;) {
    PAGODA_ASSIGN_OR_RETURN(auto page, store_->PendingLines(a.record.id, after, 1000));
    if (page.empty()) break;
    for (const LineRecord& l : page) {
      LineCommit c;
      c.line_no = l.line_no;
      c.state = LineState::kError;
      lines.emplace_back(std::move(c), ErrorLine(l.request_id, l.custom_id, code, message));
      after = l.line_no;
    }
  }
  if (lines.empty()) return Status::Ok();
  std::vector<LineCommit> commits;
  PAGODA_RETURN_IF_ERROR(AppendResults(a.record.id, lines, &commits));
  PAGODA_ASSIGN_OR_RETURN(int64_t n, store_->CommitLines(a.record.id, commits));
  metrics_->lines_failed += n;
  return Status::Ok();
}

void BatchService::Finalize(Active& a, BatchStatus final_status) {
  BatchRecord& b = a.record;
  const int64_t now = NowMs();
  std::string results;
  if (auto r = files_.Get(ResultsFileId(b.id)); r.ok()) results = std::move(r).value();
  auto slice = [&](const LineRecord& l) -> std::string_view {
    if (l.result_offset < 0 || l.result_offset + l.result_length > static_cast<int64_t>(results.size())) return {};
    return std::string_view(results).substr(static_cast<size_t>(l.result_offset), static_cast<size_t>(l.result_length));
  };
  std::string out, err;
  int64_t n_out = 0, n_err = 0;
  int64_t after = 0;
  for (;;) {
    auto page = store_->Lines(b.id, after, 1000);
    if (!page.ok()) {
      ++metrics_->store_errors;
      PAGODA_LOG(Warning) << "batch runner: " << page.status().message();
      return;  // tried again on the next tick (the status is unchanged)
    }
    if (page->empty()) break;
    for (const LineRecord& l : *page) {
      after = l.line_no;
      std::string_view text = slice(l);
      if (l.state == LineState::kPending) continue;
      if (text.empty()) {
        // The results file lost it (deleted by hand): say so rather than drop the line.
        err += ErrorLine(l.request_id, l.custom_id, "result_lost", "this request's answer was lost") + "\n";
        ++n_err;
      } else if (l.state == LineState::kDone) {
        out += text;
        ++n_out;
      } else {
        err += text;
        ++n_err;
      }
    }
  }
  auto make = [&](const char* kind, const std::string& bytes, int64_t lines) -> std::optional<FileRecord> {
    if (lines == 0) return std::nullopt;
    FileRecord f;
    f.id = OutputFileId(b.id, kind);
    f.tenant_id = b.tenant_id;
    f.purpose = "batch_output";
    f.filename = b.id + "_" + kind + ".jsonl";
    f.bytes = static_cast<int64_t>(bytes.size());
    f.lines = lines;
    f.created_at = now;
    f.expires_at = options_.file_ttl.count() ? now + options_.file_ttl.count() * 1000 : 0;
    return f;
  };
  std::optional<FileRecord> fo = make("output", out, n_out);
  std::optional<FileRecord> fe = make("errors", err, n_err);
  for (auto [f, bytes] : {std::pair{&fo, &out}, std::pair{&fe, &err}}) {
    if (!*f) continue;
    if (Status st = files_.Put((*f)->id, *bytes); !st.ok()) {
      ++metrics_->store_errors;
      PAGODA_LOG(Warning) << "batch runner: " << st.message();
      return;
    }
  }
  if (Status st = store_->Finish(b.id, fo, fe, final_status, now); !st.ok()) {
    ++metrics_->store_errors;
    PAGODA_LOG(Warning) << "batch runner: " << st.message();
    return;
  }
  ++metrics_->batches_finished;
  (void)files_.Remove(ResultsFileId(b.id));
  b.status = final_status;
  a.input.clear();
  a.input.shrink_to_fit();
  a.input_loaded = false;
  PAGODA_LOG(Info) << "batch " << b.id << " " << BatchStatusName(final_status) << ": " << n_out << " answered, "
                   << n_err << " failed";
}

void BatchService::ExpireFiles() {
  auto expired = store_->ExpiredFiles(NowMs(), 1000);
  if (!expired.ok()) return;
  for (const FileRecord& f : *expired) {
    if (files_.Remove(f.id).ok()) (void)store_->MarkFileDeleted(f.tenant_id, f.id, NowMs());
  }
}

std::string BatchService::RenderMetrics() const {
  std::string s;
  auto add = [&](const char* name, const char* type, const char* help, const std::string& value) {
    s += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + value +
         "\n";
  };
  int in_flight;
  {
    std::lock_guard<std::mutex> lock(sh_->mu);
    in_flight = sh_->in_flight;
  }
  add("pagoda_batch_lines_in_flight", "gauge", "Batch lines running now.", std::to_string(in_flight));
  add("pagoda_batch_active", "gauge", "Batches not yet finished.", std::to_string(metrics_->active.load()));
  add("pagoda_batch_lines_completed_total", "counter", "Batch lines answered 2xx and committed.",
      std::to_string(metrics_->lines_done.load()));
  add("pagoda_batch_lines_failed_total", "counter", "Batch lines committed to the error file.",
      std::to_string(metrics_->lines_failed.load()));
  add("pagoda_batch_lines_retried_total", "counter", "Batch lines turned away for now (429/503) and run again.",
      std::to_string(metrics_->lines_retried.load()));
  add("pagoda_batch_commits_total", "counter", "Store transactions committing batch line answers.",
      std::to_string(metrics_->commits.load()));
  add("pagoda_batch_commit_seconds_total", "counter", "Time spent in those commits.",
      PromNumber(static_cast<double>(metrics_->commit_ns.load()) * 1e-9));
  add("pagoda_batch_finished_total", "counter", "Batches finalized (any final status).",
      std::to_string(metrics_->batches_finished.load()));
  add("pagoda_batch_store_errors_total", "counter", "Batch store operations that failed (retried).",
      std::to_string(metrics_->store_errors.load()));
  return s;
}

}  // namespace pagoda::batch
