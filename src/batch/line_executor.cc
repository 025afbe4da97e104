#include "batch/line_executor.h"

#include <atomic>
#include <mutex>

namespace pagoda::batch {
namespace {

// A ResponseWriter with no connection behind it: keeps the one response the
// handler gives and hands it to `done`. Batch lines never stream (their
// bodies are checked for stream: true), so an SSE response is an error. If
// the handler drops its last reference without answering, the line gets
// status 0 (retried later).
class CapturingWriter final : public http::ResponseWriter {
 public:
  explicit CapturingWriter(std::function<void(LineAnswer)> done) : done_(std::move(done)) {}
  ~CapturingWriter() override { Finish(LineAnswer{}); }

  bool Respond(http::Response response) override {
    LineAnswer a;
    a.status = response.status;
    a.body = std::move(response.body);
    if (const std::string* ra = response.headers.Find("retry-after")) a.retry_after = *ra;
    return Finish(std::move(a));
  }
  bool BeginSse(http::Headers) override {
    return Finish(LineAnswer{500, R"({"error":{"message":"a batch line cannot stream","type":"server_error","param":null,"code":null}})", ""});
  }
  bool SendSse(std::string_view) override { return false; }
  bool SendSseEvents(std::string_view) override { return false; }
  void EndSse() override {}
  void OnCancel(std::function<void()> callback) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_cancel_ = std::move(callback);
  }
  bool cancelled() const override { return false; }
  size_t queued_bytes() const override { return 0; }

 private:
  bool Finish(LineAnswer a) {
    if (finished_.exchange(true)) return false;
    if (done_) done_(std::move(a));
    done_ = nullptr;
    return true;
  }
  std::atomic<bool> finished_{false};
  std::function<void(LineAnswer)> done_;
  std::mutex mu_;
  std::function<void()> on_cancel_;
};

}  // namespace

RouterLineExecutor::RouterLineExecutor(std::shared_ptr<const http::Router> router, Decorate decorate)
    : router_(std::move(router)), decorate_(std::move(decorate)) {}

void RouterLineExecutor::Execute(const LineCall& call, std::function<void(LineAnswer)> done) {
  http::Request r;
  r.method = "POST";
  r.target = call.url;
  r.path = call.url;
  r.body = call.body;
  r.remote_address = "batch";
  // In memory: nothing crosses a network, so keys need no TLS here.
  r.secure = true;
  r.headers.Add("content-type", "application/json");
  r.headers.Add("x-request-id", call.request_id);
  if (decorate_) decorate_(call, r);
  router_->Dispatch(r, std::make_shared<CapturingWriter>(std::move(done)));
}

}  // namespace pagoda::batch
