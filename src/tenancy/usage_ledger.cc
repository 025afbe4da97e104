#include "tenancy/usage_ledger.h"

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "tenancy/api_key.h"

namespace pagoda::tenancy {
namespace {

// Field values come from ids and operator configuration, but a record must
// never be lost for a stray byte: replace control bytes, cut to 256 bytes.
void Clean(std::string* s) {
  if (s->size() > 256) s->resize(256);
  for (char& c : *s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
}

void Sanitize(UsageRecord* r) {
  if (r->request_id.empty()) {
    auto id = RandomId("req_", 12);
    r->request_id = id.ok() ? *id : "req_unknown";
  }
  for (std::string* s : {&r->request_id, &r->tenant_id, &r->key_id, &r->model, &r->deployment, &r->version}) {
    Clean(s);
  }
  r->prompt_tokens = std::max<int64_t>(0, r->prompt_tokens);
  r->completion_tokens = std::max<int64_t>(0, r->completion_tokens);
  r->cached_tokens = std::clamp<int64_t>(r->cached_tokens, 0, r->prompt_tokens);
  if (static_cast<int>(r->service_tier) >= kWorkloadClassCount) r->service_tier = WorkloadClass::kInteractive;
}

}  // namespace

UsageLedger::UsageLedger(TenantStore& store, UsageLedgerOptions options) : store_(store), options_(options) {
  writer_ = std::thread([this] { Run(); });
}

UsageLedger::~UsageLedger() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  writer_.join();
}

void UsageLedger::Record(UsageRecord record) {
  Sanitize(&record);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= options_.max_pending) {
      ++stats_.dropped;
      return;
    }
    queue_.push_back(std::move(record));
    ++enqueued_seq_;
    ++stats_.recorded;
    wake = queue_.size() == options_.batch_size;
  }
  if (wake) work_cv_.notify_one();
}

Status UsageLedger::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = enqueued_seq_;
  if (written_seq_ >= target) return Status::Ok();
  flush_requested_ = true;
  work_cv_.notify_one();
  if (done_cv_.wait_for(lock, timeout, [&] { return written_seq_ >= target; })) return Status::Ok();
  return DeadlineExceeded("usage ledger: " + std::to_string(target - written_seq_) + " records not written after " +
                          std::to_string(timeout.count()) + " ms" +
                          (last_error_.ok() ? std::string() : "; last store error: " + last_error_.ToString()));
}

Status UsageLedger::AdmissionStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() < options_.admit_high_water) return Status::Ok();
  return ResourceExhausted("usage ledger: " + std::to_string(queue_.size()) +
                           " records wait for the store; refusing requests that could not be metered" +
                           (last_error_.ok() ? std::string() : " (last store error: " + last_error_.ToString() + ")"));
}

UsageLedgerStats UsageLedger::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  UsageLedgerStats s = stats_;
  s.pending = static_cast<int64_t>(queue_.size());
  return s;
}

void UsageLedger::Run() {
  using Clock = std::chrono::steady_clock;
  const auto interval = std::chrono::milliseconds(std::max(1, options_.flush_interval_ms));
  int backoff_ms = 0;
  Clock::time_point give_up_at = Clock::time_point::max();
  std::vector<UsageRecord> batch;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (backoff_ms > 0) {
      // After a failure: wait before retrying. Shutdown cuts the first wait
      // short, then keeps retrying (still spaced) until its deadline.
      const auto wait = std::chrono::milliseconds(backoff_ms);
      if (stop_) {
        work_cv_.wait_until(lock, std::min(give_up_at, Clock::now() + wait));
      } else {
        work_cv_.wait_for(lock, wait, [&] { return stop_; });
      }
    } else {
      work_cv_.wait_for(lock, interval,
                        [&] { return stop_ || flush_requested_ || queue_.size() >= options_.batch_size; });
    }
    if (stop_ && give_up_at == Clock::time_point::max()) {
      give_up_at = Clock::now() + std::chrono::milliseconds(options_.shutdown_timeout_ms);
    }
    if (queue_.empty()) {
      flush_requested_ = false;
      if (stop_) return;
      continue;
    }
    if (stop_ && Clock::now() >= give_up_at) {
      stats_.dropped += static_cast<int64_t>(queue_.size());
      PAGODA_LOG(Error) << "usage ledger: shutting down with " << queue_.size()
                        << " records unwritten; last store error: " << last_error_.ToString();
      return;
    }
    const size_t n = std::min(queue_.size(), options_.batch_size);
    batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    lock.unlock();
    Status st = store_.AppendUsage(batch);
    lock.lock();
    if (st.ok()) {
      // Only this thread pops, so the batch is still the queue's head.
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      written_seq_ += n;
      stats_.written += static_cast<int64_t>(n);
      ++stats_.batches;
      if (backoff_ms > 0) {
        PAGODA_LOG(Info) << "usage ledger: the store accepts writes again";
      }
      backoff_ms = 0;
      last_error_ = Status::Ok();
      if (queue_.empty()) flush_requested_ = false;
      done_cv_.notify_all();
    } else {
      if (last_error_.ok()) {
        PAGODA_LOG(Warning) << "usage ledger: batch write failed, retrying: " << st.ToString();
      }
      ++stats_.failures;
      last_error_ = st;
      backoff_ms = std::min(options_.max_retry_backoff_ms, backoff_ms == 0 ? 50 : backoff_ms * 2);
    }
  }
}

std::string MetadataLogLine(const UsageRecord& r) {
  std::string out;
  out.reserve(256);
  auto text = [&](const char* k, const std::string& v) {
    if (!out.empty()) out += ' ';
    out += k;
    out += '=';
    const bool quote = v.empty() || v.find_first_of(" \"=\\") != std::string::npos;
    if (quote) out += '"';
    for (char c : v.size() > 256 ? v.substr(0, 256) : v) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) {
        out += '?';
      } else {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
    }
    if (quote) out += '"';
  };
  auto num = [&](const char* k, int64_t v) {
    out += ' ';
    out += k;
    out += '=';
    out += std::to_string(v);
  };
  text("request_id", r.request_id);
  text("tenant", r.tenant_id);
  text("key", r.key_id);
  text("model", r.model);
  text("deployment", r.deployment);
  text("version", r.version);
  text("service_tier", WorkloadClassName(r.service_tier));
  text("status", UsageStatusName(r.status));
  num("http_status", r.http_status);
  num("prompt_tokens", r.prompt_tokens);
  num("cached_tokens", r.cached_tokens);
  num("completion_tokens", r.completion_tokens);
  num("queue_ms", r.queue_ms);
  num("ttft_ms", r.ttft_ms);
  num("total_ms", r.total_ms);
  num("started_at_ms", r.started_at_ms);
  return out;
}

}  // namespace pagoda::tenancy
