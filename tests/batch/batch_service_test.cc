// The batch runner over a real in-process router: every valid line answered
// exactly once across a restart, turned-away lines retried, cancel and
// expiry with partial results, output and error files in OpenAI's format.
// The endpoint here is a small handler of the test's own (the real server's
// routes are covered by tests/e2e/batch_api.test.mjs).
#include "batch/batch_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "batch/batch_routes.h"
#include "tenancy/store_backends.h"

namespace pagoda::batch {
namespace {

using nlohmann::json;
using tenancy::testsupport::TempDir;

std::string Line(const std::string& id, const std::string& content) {
  return json{{"custom_id", id},
              {"method", "POST"},
              {"url", "/v1/chat/completions"},
              {"body", {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", content}}})}}}}
      .dump();
}

// The endpoint: answers with the message reversed and usage = its length;
// can hold answers back, or turn the first `refuse` calls away with 429.
struct Endpoint {
  std::mutex mu;
  std::vector<std::pair<std::string, std::shared_ptr<http::ResponseWriter>>> held;
  bool hold = false;
  std::atomic<int> refuse{0};
  std::atomic<int> calls{0};
  std::map<std::string, int> seen;  // x-request-id -> answers given

  static http::Response Answer(const std::string& body) {
    json req = json::parse(body);
    std::string content = req["messages"][0]["content"];
    std::string reversed(content.rbegin(), content.rend());
    json resp{{"object", "chat.completion"},
              {"model", req["model"]},
              {"choices", json::array({{{"index", 0}, {"message", {{"role", "assistant"}, {"content", reversed}}}}})},
              {"usage", {{"prompt_tokens", content.size()}, {"completion_tokens", 2}, {"total_tokens", content.size() + 2}}}};
    return http::Response::Json(200, resp.dump());
  }

  void Handle(const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
    ++calls;
    if (refuse.fetch_sub(1) > 0) {
      http::Response busy = http::ErrorResponse(429, "busy", "rate_limit_exceeded");
      busy.headers.Add("retry-after", "1");
      w->Respond(std::move(busy));
      return;
    }
    std::lock_guard<std::mutex> lock(mu);
    ++seen[*r.headers.Find("x-request-id")];
    if (hold) {
      held.emplace_back(r.body, std::move(w));
      return;
    }
    w->Respond(Answer(r.body));
  }
  void Release(bool keep_holding = false) {
    std::vector<std::pair<std::string, std::shared_ptr<http::ResponseWriter>>> h;
    {
      std::lock_guard<std::mutex> lock(mu);
      hold = keep_holding;
      h.swap(held);
    }
    for (auto& [body, w] : h) w->Respond(Answer(body));
  }
};

class BatchServiceTest : public ::testing::Test {
 protected:
  std::unique_ptr<BatchService> Make(std::function<int64_t()> clock = nullptr) {
    auto router = std::make_shared<http::Router>();
    router->Add("POST", "/v1/chat/completions",
                http::Handler([this](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
                  endpoint_.Handle(r, std::move(w));
                }));
    auto store = BatchStore::Open("sqlite://" + dir_.File("batch.db"));
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    auto files = FileStore::Open(dir_.File("data"));
    EXPECT_TRUE(files.ok());
    BatchOptions o;
    o.lines_in_flight = 4;
    o.poll = std::chrono::milliseconds(20);
    o.meter_usage = true;
    o.deployment = "m";
    o.now_ms = std::move(clock);
    auto s = std::make_unique<BatchService>(
        o, std::move(store).value(), std::move(files).value(),
        std::make_unique<RouterLineExecutor>(router, [](const LineCall&, http::Request&) {}));
    return s;
  }

  BatchRecord WaitFor(BatchService& s, const std::string& id, std::function<bool(const BatchRecord&)> pred,
                      int timeout_ms = 20000) {
    BatchRecord b;
    for (int i = 0; i < timeout_ms / 10; ++i) {
      b = s.store().GetBatch(owner_.tenant_id, id).value();
      if (pred(b)) return b;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "batch " << id << " stuck in " << BatchStatusName(b.status);
    return b;
  }

  std::vector<json> Lines(BatchService& s, const std::string& file_id) {
    std::vector<json> out;
    if (file_id.empty()) return out;
    auto text = s.FileContent(owner_, file_id);
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    size_t pos = 0;
    while (pos < text->size()) {
      size_t end = text->find('\n', pos);
      out.push_back(json::parse(text->substr(pos, end - pos)));
      pos = end + 1;
    }
    return out;
  }

  TempDir dir_;
  Endpoint endpoint_;
  Owner owner_{"t", "key_1"};
};

TEST_F(BatchServiceTest, EveryValidLineIsAnsweredOnceAndBadOnesFailAlone) {
  auto s = Make();
  s->Start();
  std::string file;
  for (int i = 0; i < 20; ++i) file += Line("c" + std::to_string(i), "text " + std::to_string(i)) + "\n";
  file += "not json\n" + Line("c3", "dup") + "\n";
  auto f = s->Upload(owner_, "in.jsonl", "batch", file);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->lines, 22);
  auto b = s->CreateBatch(owner_, f->id, "/v1/chat/completions", "24h", R"({"k":"v"})");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  BatchRecord done = WaitFor(*s, b->id, [](const BatchRecord& r) { return IsTerminal(r.status); });
  EXPECT_EQ(done.status, BatchStatus::kCompleted);
  EXPECT_EQ(done.counts.total, 22);
  EXPECT_EQ(done.counts.completed, 20);
  EXPECT_EQ(done.counts.failed, 2);
  EXPECT_GT(done.in_progress_at, 0);
  EXPECT_GT(done.finalizing_at, 0);
  EXPECT_GT(done.completed_at, 0);
  auto out = Lines(*s, done.output_file_id);
  ASSERT_EQ(out.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(out[i]["custom_id"], "c" + std::to_string(i));
    EXPECT_EQ(out[i]["response"]["status_code"], 200);
    const std::string in = "text " + std::to_string(i);
    EXPECT_EQ(out[i]["response"]["body"]["choices"][0]["message"]["content"], std::string(in.rbegin(), in.rend()));
    EXPECT_TRUE(out[i]["error"].is_null());
  }
  auto err = Lines(*s, done.error_file_id);
  ASSERT_EQ(err.size(), 2u);
  EXPECT_EQ(err[0]["error"]["code"], "invalid_json");
  EXPECT_EQ(err[1]["error"]["code"], "duplicate_custom_id");
  for (const auto& [id, n] : endpoint_.seen) EXPECT_EQ(n, 1) << id;
  // The results file is gone once the output is written.
  EXPECT_FALSE(std::filesystem::exists(dir_.File("data") + "/files/results-" + b->id));
  s->Stop(std::chrono::milliseconds(0));
}

TEST_F(BatchServiceTest, ARestartResumesWithoutRedoingOrLosingALine) {
  std::string id;
  {
    auto s = Make();
    s->Start();
    endpoint_.hold = true;
    std::string file;
    for (int i = 0; i < 12; ++i) file += Line("c" + std::to_string(i), "x" + std::to_string(i)) + "\n";
    auto f = s->Upload(owner_, "in.jsonl", "batch", file);
    ASSERT_TRUE(f.ok());
    auto b = s->CreateBatch(owner_, f->id, "/v1/chat/completions", "24h", "");
    ASSERT_TRUE(b.ok());
    id = b->id;
    // Four lines start and are held; answer them, then four more start.
    for (int i = 0; i < 500 && endpoint_.calls < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    endpoint_.Release(/*keep_holding=*/true);
    WaitFor(*s, id, [](const BatchRecord& r) { return r.counts.completed >= 4; });
    for (int i = 0; i < 500 && endpoint_.calls < 8; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // Stop with four lines in flight: they are not committed.
    s->Stop(std::chrono::milliseconds(0));
    EXPECT_EQ(s->store().GetBatch("t", id)->status, BatchStatus::kInProgress);
  }
  endpoint_.Release();  // the old process's answers arrive after it stopped: dropped
  auto s = Make();
  s->Start();
  BatchRecord done = WaitFor(*s, id, [](const BatchRecord& r) { return IsTerminal(r.status); });
  EXPECT_EQ(done.status, BatchStatus::kCompleted);
  EXPECT_EQ(done.counts.completed, 12);
  auto out = Lines(*s, done.output_file_id);
  ASSERT_EQ(out.size(), 12u);
  std::set<std::string> ids;
  for (const auto& l : out) ids.insert(l["custom_id"].get<std::string>());
  EXPECT_EQ(ids.size(), 12u);
  auto tenants = tenancy::OpenTenantStore("sqlite://" + dir_.File("batch.db"));
  auto rows = (*tenants)->ListUsage("t", 0, INT64_MAX, 100);
  EXPECT_EQ(rows->size(), 12u);  // one usage record per line, however often it ran
  s->Stop(std::chrono::milliseconds(0));
}

TEST_F(BatchServiceTest, LinesTurnedAwayRunAgainInsteadOfFailing) {
  auto s = Make();
  s->Start();
  endpoint_.refuse = 3;
  std::string file;
  for (int i = 0; i < 3; ++i) file += Line("c" + std::to_string(i), "x") + "\n";
  auto f = s->Upload(owner_, "in.jsonl", "batch", file);
  auto b = s->CreateBatch(owner_, f->id, "/v1/chat/completions", "24h", "");
  BatchRecord done = WaitFor(*s, b->id, [](const BatchRecord& r) { return IsTerminal(r.status); });
  EXPECT_EQ(done.counts.completed, 3);
  EXPECT_EQ(done.counts.failed, 0);
  EXPECT_GE(endpoint_.calls.load(), 6);
  s->Stop(std::chrono::milliseconds(0));
}

TEST_F(BatchServiceTest, CancelLetsRunningLinesEndAndStartsNoMore) {
  auto s = Make();
  s->Start();
  endpoint_.hold = true;
  std::string file;
  for (int i = 0; i < 10; ++i) file += Line("c" + std::to_string(i), "x") + "\n";
  auto f = s->Upload(owner_, "in.jsonl", "batch", file);
  auto b = s->CreateBatch(owner_, f->id, "/v1/chat/completions", "24h", "");
  for (int i = 0; i < 500 && endpoint_.calls < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto c = s->Cancel(owner_, b->id);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status, BatchStatus::kCancelling);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(endpoint_.calls.load(), 4);  // none started after the cancel
  endpoint_.Release();
  BatchRecord done = WaitFor(*s, b->id, [](const BatchRecord& r) { return IsTerminal(r.status); });
  EXPECT_EQ(done.status, BatchStatus::kCancelled);
  EXPECT_EQ(done.counts.completed, 4);
  EXPECT_EQ(done.counts.failed, 6);
  EXPECT_EQ(Lines(*s, done.output_file_id).size(), 4u);
  auto err = Lines(*s, done.error_file_id);
  ASSERT_EQ(err.size(), 6u);
  EXPECT_EQ(err[0]["error"]["code"], "batch_cancelled");
  auto again = s->Cancel(owner_, b->id);  // cancelling a cancelled batch changes nothing
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, BatchStatus::kCancelled);
  EXPECT_EQ(again->cancelled_at, done.cancelled_at);
  s->Stop(std::chrono::milliseconds(0));
}

TEST_F(BatchServiceTest, TheCompletionWindowEndingExpiresWhatIsLeft) {
  std::atomic<int64_t> now{1'000'000};
  auto s = Make([&] { return now.load(); });
  s->Start();
  endpoint_.hold = true;
  std::string file;
  for (int i = 0; i < 6; ++i) file += Line("c" + std::to_string(i), "x") + "\n";
  auto f = s->Upload(owner_, "in.jsonl", "batch", file);
  auto b = s->CreateBatch(owner_, f->id, "/v1/chat/completions", "24h", "");
  for (int i = 0; i < 500 && endpoint_.calls < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  now += 25 * 3600 * 1000;
  endpoint_.Release();
  BatchRecord done = WaitFor(*s, b->id, [](const BatchRecord& r) { return IsTerminal(r.status); });
  EXPECT_EQ(done.status, BatchStatus::kExpired);
  EXPECT_EQ(done.counts.completed, 4);
  EXPECT_EQ(done.counts.failed, 2);
  auto err = Lines(*s, done.error_file_id);
  ASSERT_EQ(err.size(), 2u);
  EXPECT_EQ(err[0]["error"]["code"], "batch_expired");
  s->Stop(std::chrono::milliseconds(0));
}

TEST_F(BatchServiceTest, BadRequestsAreRefusedClearly) {
  auto s = Make();
  EXPECT_EQ(s->Upload(owner_, "in.jsonl", "fine-tune", Line("a", "x")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Upload(owner_, "in.jsonl", "batch", "\n\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Upload(owner_, "", "batch", Line("a", "x")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Upload(owner_, "in.jsonl", "batch", std::string(200ll << 20, 'x')).status().code(),
            StatusCode::kResourceExhausted);
  auto f = s->Upload(owner_, "in.jsonl", "batch", Line("a", "x"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(s->CreateBatch(owner_, f->id, "/v1/embeddings", "24h", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->CreateBatch(owner_, f->id, "/v1/chat/completions", "1h", "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(s->CreateBatch(owner_, f->id, "/v1/chat/completions", "24h", "[1]").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(s->CreateBatch(owner_, "file-nope", "/v1/chat/completions", "24h", "").status().code(),
            StatusCode::kNotFound);
  Owner other{"other", "key_2"};
  EXPECT_EQ(s->CreateBatch(other, f->id, "/v1/chat/completions", "24h", "").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s->FileContent(other, f->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(HttpStatusOf(s->FileContent(other, f->id).status()), 404);
  EXPECT_EQ(HttpStatusOf(ResourceExhausted("x")), 413);
  EXPECT_EQ(HttpStatusOf(FailedPrecondition("x")), 409);
}

}  // namespace
}  // namespace pagoda::batch
