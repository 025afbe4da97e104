#include "server/prefill_job.h"

#include "server/error_mapping.h"

namespace pagoda::server {

void PrefillJob::Start(ServeContext& ctx, std::vector<EngineRequest> requests, JobSpec spec, PrefillRenderer render,
                       std::shared_ptr<http::ResponseWriter> writer) {
  for (auto& r : requests) spec.tenant.ApplyTo(r);
  int64_t prompt_tokens = 0, open = 0;
  std::vector<int32_t> n_sequences;
  for (const auto& r : requests) {
    prompt_tokens += PrefillPromptTokens(r);
    n_sequences.push_back(r.n);
    open += r.n;
  }
  auto handles = SubmitJobRequests(ctx, std::move(requests), spec, *writer);
  if (!handles) return;
  auto job = std::make_shared<PrefillJob>(ctx, std::move(spec), std::move(render), std::move(writer));
  job->handles_ = std::move(*handles);
  job->prompt_tokens_ = prompt_tokens;
  job->n_sequences_ = std::move(n_sequences);
  job->open_ = open;
  job->Attach();
}

int64_t PrefillPromptTokens(const EngineRequest& r) {
  if (!r.prefill || r.prefill->suffixes.empty()) return static_cast<int64_t>(r.prompt.size()) * r.n;
  int64_t n = 0;
  for (const auto& s : r.prefill->suffixes) n += static_cast<int64_t>(r.prompt.size() + s.size());
  return n;
}

PrefillJob::PrefillJob(ServeContext& ctx, JobSpec spec, PrefillRenderer render,
                       std::shared_ptr<http::ResponseWriter> writer)
    : ctx_(ctx), spec_(std::move(spec)), render_(std::move(render)), writer_(std::move(writer)) {}

void PrefillJob::CancelAll() {
  for (auto& h : handles_) h->Cancel();
}

void PrefillJob::Attach() {
  self_ = shared_from_this();
  results_.resize(handles_.size());
  for (size_t i = 0; i < handles_.size(); ++i) results_[i].resize(static_cast<size_t>(n_sequences_[i]));
  std::weak_ptr<PrefillJob> weak = self_;
  writer_->OnCancel([weak] {
    if (auto job = weak.lock()) job->CancelAll();
  });
  // Notifications run on the engine thread: post only.
  for (auto& h : handles_) h->SetNotify([weak] {
    if (auto job = weak.lock()) job->ScheduleDrain();
  });
}

void PrefillJob::ScheduleDrain() {
  if (drain_posted_.exchange(true)) return;
  ctx_.pump->Post([job = shared_from_this()] {
    job->drain_posted_.store(false);
    job->Drain();
  });
}

void PrefillJob::Drain() {
  if (completed_) return;
  for (size_t p = 0; p < handles_.size(); ++p) {
    while (auto e = handles_[p]->TryPop()) {
      if (!e->is_final()) continue;
      cached_tokens_ += e->usage.tokens_cached;
      const size_t index = static_cast<size_t>(e->index);
      if (index < results_[p].size()) results_[p][index] = std::move(*e);
      --open_;
    }
  }
  if (open_ == 0) Complete();
}

void PrefillJob::Complete() {
  completed_ = true;
  auto self = std::move(self_);  // released when this call returns
  const Status* error = nullptr;
  bool cancelled = false;
  for (const auto& r : results_) {
    for (const EngineEvent& e : r) {
      if (e.finish == FinishReason::kError && error == nullptr) error = &e.error;
      cancelled |= e.finish == FinishReason::kCancelled;
    }
  }
  if (spec_.on_finish) {
    JobOutcome o;
    o.prompt_tokens = prompt_tokens_;
    o.cached_tokens = cached_tokens_;
    o.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - arrival_).count();
    o.failed = error != nullptr;
    o.cancelled = cancelled && error == nullptr;
    spec_.on_finish(o);
  }
  if (error != nullptr) {
    api::ApiError e = ApiErrorFromStatus(*error);
    if (e.status == 429) e.status = 503;  // in flight: the KV cache is too small, not a queue
    writer_->Respond(WithJobHeaders(spec_, ErrorResponse(e)));
    return;
  }
  if (cancelled) return;  // nobody is listening
  writer_->Respond(WithJobHeaders(spec_, http::Response::Json(200, render_(results_, prompt_tokens_))));
}

}  // namespace pagoda::server
