#include "server/generation_job.h"

#include <algorithm>
#include <utility>

#include "api/api_error.h"
#include "server/error_mapping.h"
#include "server/kv_transfer_leg.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

struct GenerationJob::Choice {
  Choice(const Tokenizer& tok, std::vector<std::string> stop) : decoder(tok), stopper(std::move(stop)) {}
  int index = 0;
  int prompt = 0;
  StreamingDecoder decoder;
  StopMatcher stopper;
  std::string text;                             // non-stream: everything; stream: unused
  std::vector<api::TokenLogprob> logprobs;      // non-stream: all; stream: not yet sent
  int64_t sent_bytes = 0;                       // stream: text bytes sent (text offsets)
  int64_t completion_tokens = 0;
  bool done = false;                            // finished (stop string, EOG, length)
  bool final_seen = false;                      // the engine's final event arrived
  bool echo_pending = false;                    // stream: the echoed prompt waits for its logprobs
  api::FinishReason finish = api::FinishReason::kStop;
  std::unique_ptr<chat::OutputParser> parser;   // chat: reasoning / tool calls
};

namespace {

// The engine's errors for a constrained sequence that no token can continue,
// or that max_tokens cannot complete (engine/engine_grammar.cc).
bool IsGrammarDeadEnd(const Status& s) {
  return s.message().find("grammar allows no next token") != std::string::npos ||
         s.message().find("grammar cannot be completed") != std::string::npos;
}

void MergeDelta(api::ChatDelta* into, api::ChatDelta&& more) {
  into->content += more.content;
  into->reasoning += more.reasoning;
  for (auto& t : more.tool_calls) {
    if (!t.id && !into->tool_calls.empty() && into->tool_calls.back().index == t.index) {
      into->tool_calls.back().arguments += t.arguments;
    } else {
      into->tool_calls.push_back(std::move(t));
    }
  }
}

}  // namespace

void GenerationJob::Start(ServeContext& ctx, std::vector<EngineRequest> requests, JobSpec spec,
                          std::unique_ptr<ResponseFormat> format, std::shared_ptr<http::ResponseWriter> writer) {
  for (auto& r : requests) spec.tenant.ApplyTo(r);
  std::shared_ptr<kvtransfer::KvTransferSender> sender;
  if (spec.kv_transfer && spec.kv_transfer->do_remote_decode) {
    auto started = StartPrefillLeg(ctx, *spec.kv_transfer, spec.stream, spec.n, requests);
    if (!started.ok()) {
      if (spec.on_finish) spec.on_finish(JobOutcome{.failed = true});
      writer->Respond(ErrorResponse(started.error()));
      return;
    }
    sender = std::move(started).value();
  }
  std::vector<int64_t> prompt_tokens;
  for (const auto& r : requests) prompt_tokens.push_back(static_cast<int64_t>(r.prompt.size()));
  auto handles = SubmitJobRequests(ctx, std::move(requests), spec, *writer);
  if (!handles) return;
  auto job = std::make_shared<GenerationJob>(ctx, std::move(spec), std::move(format), std::move(writer));
  job->kv_sender_ = std::move(sender);
  job->handles_ = std::move(*handles);
  job->prompt_tokens_ = std::move(prompt_tokens);
  job->cached_tokens_.assign(job->prompt_tokens_.size(), 0);
  job->Attach();
}

http::Response WithJobHeaders(const JobSpec& spec, http::Response r) {
  for (const auto& [name, value] : spec.response_headers.fields()) r.headers.Set(name, value);
  return r;
}

std::optional<std::vector<RequestHandle>> SubmitJobRequests(ServeContext& ctx, std::vector<EngineRequest> requests,
                                                            const JobSpec& spec, http::ResponseWriter& writer) {
  const auto arrival = std::chrono::steady_clock::now();
  std::vector<RequestHandle> handles;
  for (auto& r : requests) {
    if (ctx.request_timeout.count() > 0) r.deadline = arrival + ctx.request_timeout;
    auto handle = ctx.engine->Submit(std::move(r));
    if (!handle.ok()) {
      for (auto& h : handles) h->Cancel();
      if (spec.on_finish) spec.on_finish(JobOutcome{.failed = true});
      writer.Respond(WithJobHeaders(spec, ErrorResponse(ApiErrorFromStatus(handle.status()))));
      return std::nullopt;
    }
    handles.push_back(*handle);
  }
  return handles;
}

GenerationJob::GenerationJob(ServeContext& ctx, JobSpec spec, std::unique_ptr<ResponseFormat> format,
                             std::shared_ptr<http::ResponseWriter> writer)
    : ctx_(ctx), spec_(std::move(spec)), format_(std::move(format)), writer_(std::move(writer)) {}

void GenerationJob::Attach() {
  self_ = shared_from_this();
  const int n_prompts = static_cast<int>(handles_.size());
  echo_logprobs_.resize(spec_.echo_first_tokens.empty() ? 0 : handles_.size());
  for (int p = 0; p < n_prompts; ++p) {
    for (int k = 0; k < spec_.n; ++k) {
      auto c = std::make_unique<Choice>(*ctx_.tokenizer, spec_.stop);
      c->index = p * spec_.n + k;
      c->prompt = p;
      if (spec_.parser) c->parser = std::make_unique<chat::OutputParser>(*spec_.parser);
      choices_.push_back(std::move(c));
    }
  }
  std::weak_ptr<GenerationJob> weak = self_;
  writer_->OnCancel([weak] {
    if (auto job = weak.lock()) job->CancelAll();
  });
  if (spec_.stream) {
    writer_->BeginSse(spec_.response_headers);
    for (auto& c : choices_) {
      std::string begin = format_->StreamBegin(c->index);
      if (!begin.empty()) writer_->SendSse(begin);
      const std::string& prefix = spec_.prefixes.empty() ? std::string() : spec_.prefixes[c->prompt];
      if (!spec_.echo_first_tokens.empty()) {
        c->echo_pending = true;  // sent with the prompt's logprobs (SendEcho)
      } else if (!prefix.empty()) {
        writer_->SendSse(format_->StreamDelta(c->index, prefix, nullptr, 0));
        c->sent_bytes = static_cast<int64_t>(prefix.size());
      }
    }
  } else {
    for (auto& c : choices_) {
      if (!spec_.prefixes.empty()) c->text = spec_.prefixes[c->prompt];
    }
  }
  // Notifications run on the engine thread: post only. From here on, the
  // job's state belongs to the pump thread.
  for (auto& h : handles_) h->SetNotify([weak] {
    if (auto job = weak.lock()) job->ScheduleDrain();
  });
}

void GenerationJob::CancelAll() {
  for (auto& h : handles_) h->Cancel();
}

void GenerationJob::ScheduleDrain() {
  if (drain_posted_.exchange(true)) return;
  ctx_.pump->Post([job = shared_from_this()] {
    job->drain_posted_.store(false);
    job->Drain();
  });
}

void GenerationJob::Drain() {
  if (completed_) return;
  for (int p = 0; p < static_cast<int>(handles_.size()); ++p) {
    while (auto e = handles_[p]->TryPop()) OnEvent(p, *e);
  }
  if (!completed_ && finals_ == static_cast<int>(choices_.size())) Complete();
}

api::TokenLogprob GenerationJob::LogprobEntry(const EngineEvent& e) const {
  api::TokenLogprob lp;
  lp.bytes = std::string(ctx_.tokenizer->PieceView(e.token, true));
  lp.logprob = e.logprob;
  for (const auto& t : e.top_logprobs) lp.top.push_back({std::string(ctx_.tokenizer->PieceView(t.id, true)), t.logprob});
  return lp;
}

std::vector<api::TokenLogprob> GenerationJob::EchoLogprobs(int prompt) const {
  std::vector<api::TokenLogprob> out;
  if (spec_.echo_first_tokens.empty()) return out;
  api::TokenLogprob first;  // nothing precedes it: no logprob
  first.bytes = std::string(ctx_.tokenizer->PieceView(spec_.echo_first_tokens[prompt], true));
  out.push_back(std::move(first));
  out.insert(out.end(), echo_logprobs_[prompt].begin(), echo_logprobs_[prompt].end());
  return out;
}

bool GenerationJob::SendEcho(Choice& c) {
  c.echo_pending = false;
  const std::vector<api::TokenLogprob> lp = EchoLogprobs(c.prompt);
  const std::string& prefix = spec_.prefixes[c.prompt];
  c.sent_bytes = static_cast<int64_t>(prefix.size());
  return writer_->SendSse(format_->StreamDelta(c.index, prefix, &lp, 0));
}

void GenerationJob::OnEvent(int prompt, EngineEvent& e) {
  const int ci = prompt * spec_.n + e.index;
  if (ci < 0 || ci >= static_cast<int>(choices_.size())) return;
  if (e.prompt) {  // a prompt token's logprob: before any sampled token of the prompt's choices
    if (!echo_logprobs_.empty()) echo_logprobs_[prompt].push_back(LogprobEntry(e));
    return;
  }
  Choice& c = *choices_[ci];
  if (c.echo_pending && !failed_ && !c.done && e.finish != FinishReason::kError &&
      e.finish != FinishReason::kCancelled && !SendEcho(c)) {
    CancelAll();  // the client is gone
  }
  if (e.is_final()) {
    c.final_seen = true;
    ++finals_;
    cached_tokens_[prompt] = std::max<int64_t>(cached_tokens_[prompt], e.usage.tokens_cached);
  }
  if (failed_ || c.done) return;
  if (e.finish == FinishReason::kError) {
    Fail(e.error);
    return;
  }
  if (e.finish == FinishReason::kCancelled) {
    // The client went away (or we cancelled after every choice stopped).
    c.done = true;
    cancelled_ = true;
    return;
  }
  if (e.has_token()) {
    ++c.completion_tokens;
    const auto now = std::chrono::steady_clock::now();
    if (token_events_++ == 0) first_token_ = now;
    last_token_ = now;
    const bool is_end_token = e.finish == FinishReason::kEog || e.finish == FinishReason::kStop;
    if (!is_end_token) {
      if (spec_.logprobs) c.logprobs.push_back(LogprobEntry(e));
      std::string piece = c.decoder.Push(e.token);
      for (const auto& [id, text] : spec_.marker_tokens) {
        if (id == e.token) piece += text;  // a control token the parser reads
      }
      EmitText(c, piece);
    }
  }
  if (c.done) return;  // a stop string ended it
  if (e.is_final()) {
    EmitText(c, c.decoder.Flush());
    if (c.done) return;
    // The end: nothing more can complete a held-back partial stop string.
    Deliver(c, c.stopper.Flush(), /*last=*/true);
    EndChoice(c, e.finish == FinishReason::kLength ? api::FinishReason::kLength : api::FinishReason::kStop);
  }
}

bool GenerationJob::Deliver(Choice& c, std::string_view text, bool last) {
  const std::vector<api::TokenLogprob>* lp = spec_.logprobs ? &c.logprobs : nullptr;
  if (c.parser) {
    api::ChatDelta d = c.parser->Push(text);
    if (last) MergeDelta(&d, c.parser->Finish());
    if (!spec_.stream || (d.empty() && !(last && !c.logprobs.empty()))) return true;
    const bool ok = writer_->SendSse(format_->StreamChatDelta(c.index, d, lp));
    c.logprobs.clear();
    return ok;
  }
  if (!spec_.stream) {
    c.text += text;
    return true;
  }
  if (text.empty() && !(last && !c.logprobs.empty())) return true;
  const bool ok =
      writer_->SendSse(format_->StreamDelta(c.index, text, lp, spec_.text_offset_starts[c.prompt] + c.sent_bytes));
  c.logprobs.clear();
  c.sent_bytes += static_cast<int64_t>(text.size());
  return ok;
}

void GenerationJob::EmitText(Choice& c, std::string_view decoded) {
  std::string safe = c.stopper.Push(decoded);
  if (!Deliver(c, safe, c.stopper.stopped())) CancelAll();  // the client is gone
  if (c.stopper.stopped()) {
    EndChoice(c, api::FinishReason::kStop);
    // The engine lets go of this choice's sequence now; its siblings go on.
    handles_[c.prompt]->CancelSequence(c.index - c.prompt * spec_.n);
  }
}

void GenerationJob::EndChoice(Choice& c, api::FinishReason reason) {
  c.done = true;
  if (c.parser && reason == api::FinishReason::kStop && !c.parser->message().tool_calls.empty()) {
    reason = api::FinishReason::kToolCalls;
  }
  c.finish = reason;
  if (spec_.stream) writer_->SendSse(format_->StreamFinish(c.index, reason));
}

void GenerationJob::Fail(const Status& error) {
  failed_ = true;
  CancelAll();
  api::ApiError e = ApiErrorFromStatus(error);
  if (e.status == 429) e.status = 503;  // in flight: the KV cache is too small, not a queue
  if (IsGrammarDeadEnd(error)) {
    // The request's constraint admits no token of this vocabulary here.
    e.status = 400;
    e.type = "invalid_request_error";
    e.code = "grammar_dead_end";
    if (!spec_.constraint_param.empty()) e.param = spec_.constraint_param;
  }
  if (spec_.stream) {
    writer_->SendSse(e.ToJsonString());
    writer_->SendSse(api::kSseDone);
    writer_->EndSse();
  } else {
    writer_->Respond(WithJobHeaders(spec_, ErrorResponse(e)));
  }
}

void GenerationJob::Complete() {
  completed_ = true;
  auto self = std::move(self_);  // released when this call returns
  api::Usage usage;
  for (size_t p = 0; p < prompt_tokens_.size(); ++p) {
    usage.prompt_tokens += prompt_tokens_[p];
    usage.cached_tokens += cached_tokens_[p];
  }
  for (auto& c : choices_) usage.completion_tokens += c->completion_tokens;
  if (spec_.on_finish) {
    using Seconds = std::chrono::duration<double>;
    JobOutcome o;
    o.prompt_tokens = usage.prompt_tokens;
    o.cached_tokens = usage.cached_tokens;
    o.completion_tokens = usage.completion_tokens;
    if (token_events_ > 0) o.ttft_seconds = Seconds(first_token_ - arrival_).count();
    if (token_events_ > 1) o.mean_itl_seconds = Seconds(last_token_ - first_token_).count() / (token_events_ - 1);
    o.total_seconds = Seconds(std::chrono::steady_clock::now() - arrival_).count();
    o.failed = failed_;
    o.cancelled = cancelled_ && !failed_;
    spec_.on_finish(o);
  }
  if (failed_) return;
  if (spec_.stream) {
    if (format_->include_usage()) writer_->SendSse(format_->StreamUsage(usage));
    writer_->SendSse(api::kSseDone);
    writer_->EndSse();
    return;
  }
  std::vector<ChoiceOutput> out;
  out.reserve(choices_.size());
  for (auto& c : choices_) {
    ChoiceOutput o;
    o.index = c->index;
    o.text = std::move(c->text);
    o.finish = c->finish;
    if (spec_.logprobs) {
      o.logprobs = EchoLogprobs(c->prompt);
      o.logprobs->insert(o.logprobs->end(), c->logprobs.begin(), c->logprobs.end());
    }
    o.text_offset_start = spec_.text_offset_starts.empty() ? 0 : spec_.text_offset_starts[c->prompt];
    if (c->parser) o.message = c->parser->message();
    out.push_back(std::move(o));
  }
  std::string body = format_->Body(out, usage);
  if (kv_sender_) {
    // A prefill leg answers once the decode replica has the blocks (or the
    // transfer failed); the sender's thread answers, the pump goes on.
    std::shared_ptr<kvtransfer::KvTransferSender> sender = std::move(kv_sender_);
    sender->FinishAsync([&ctx = ctx_, writer = writer_, headers = spec_.response_headers, body = std::move(body),
                         id = spec_.kv_transfer->transfer_id](const kvtransfer::KvTransferResult& r) {
      http::Response resp = http::Response::Json(200, WithTransferResult(ctx, body, id, r));
      for (const auto& [name, value] : headers.fields()) resp.headers.Set(name, value);
      writer->Respond(std::move(resp));
    });
    return;
  }
  writer_->Respond(WithJobHeaders(spec_, http::Response::Json(200, std::move(body))));
}

}  // namespace pagoda::server
