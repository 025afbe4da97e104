// PrefillJob: one embeddings / rerank / score request in flight. It submits
// the engine's prefill-only requests (EngineRequest::prefill), collects the
// final event of every sequence, and answers once all are in, through a
// renderer the route supplies. A client disconnect cancels the handles.
//
// Threads: Start on an I/O thread; events are drained on the EventPump's
// thread (the engine thread only posts there). The job keeps itself alive
// until every sequence has sent its final event.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "engine/engine_request.h"
#include "engine/request_channel.h"
#include "http/response_writer.h"
#include "server/generation_job.h"
#include "server/serve_context.h"

namespace pagoda::server {

// The final events of one engine request, indexed by sequence.
using PrefillResults = std::vector<EngineEvent>;
// Turns every request's results (in submission order) into the response body.
using PrefillRenderer = std::function<std::string(const std::vector<PrefillResults>& results, int64_t prompt_tokens)>;

// Tokens an engine request computes over all its sequences (candidates
// count the shared prefix each: the usage a client is billed).
int64_t PrefillPromptTokens(const EngineRequest& r);

class PrefillJob : public std::enable_shared_from_this<PrefillJob> {
 public:
  // spec: tenant, on_finish and response_headers as set by AdmitGeneration.
  static void Start(ServeContext& ctx, std::vector<EngineRequest> requests, JobSpec spec, PrefillRenderer render,
                    std::shared_ptr<http::ResponseWriter> writer);

  PrefillJob(ServeContext& ctx, JobSpec spec, PrefillRenderer render, std::shared_ptr<http::ResponseWriter> writer);

 private:
  void Attach();
  void ScheduleDrain();  // engine thread
  void Drain();          // pump thread
  void Complete();
  void CancelAll();

  ServeContext& ctx_;
  const JobSpec spec_;
  PrefillRenderer render_;
  std::shared_ptr<http::ResponseWriter> writer_;
  std::vector<RequestHandle> handles_;
  std::vector<PrefillResults> results_;
  std::vector<int32_t> n_sequences_;
  int64_t prompt_tokens_ = 0, cached_tokens_ = 0;
  int64_t open_ = 0;  // sequences without their final event
  std::atomic<bool> drain_posted_{false};
  bool completed_ = false;
  std::chrono::steady_clock::time_point arrival_ = std::chrono::steady_clock::now();
  std::shared_ptr<PrefillJob> self_;  // alive until Complete
};

}  // namespace pagoda::server
