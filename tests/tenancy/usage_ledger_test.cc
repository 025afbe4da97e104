#include "tenancy/usage_ledger.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tenancy/sqlite_tenant_store.h"
#include "tenancy/store_backends.h"

namespace pagoda::tenancy {
namespace {

using testsupport::TempDir;

UsageRecord Rec(const std::string& id, int64_t prompt, int64_t completion) {
  UsageRecord r;
  r.request_id = id;
  r.tenant_id = "t1";
  r.key_id = "key_1";
  r.model = "llama";
  r.deployment = "d";
  r.version = "v1";
  r.prompt_tokens = prompt;
  r.completion_tokens = completion;
  r.started_at_ms = 1'750'000'000'000;
  return r;
}

int64_t Count(TenantStore& s) {
  auto rows = s.QueryUsage({});
  return rows.ok() && !rows->empty() ? (*rows)[0].requests : 0;
}

TEST(UsageLedgerTest, WritesBatchesInTheBackground) {
  TempDir dir;
  auto store = OpenSqliteTenantStore(dir.File("l.db"));
  ASSERT_TRUE(store.ok());
  UsageLedgerOptions opts;
  opts.batch_size = 100;
  UsageLedger ledger(**store, opts);
  for (int i = 0; i < 1000; ++i) ledger.Record(Rec("r" + std::to_string(i), i, 1));
  ASSERT_TRUE(ledger.Flush().ok());
  EXPECT_EQ(Count(**store), 1000);
  const UsageLedgerStats s = ledger.stats();
  EXPECT_EQ(s.recorded, 1000);
  EXPECT_EQ(s.written, 1000);
  EXPECT_EQ(s.pending, 0);
  EXPECT_GE(s.batches, 10);
  EXPECT_EQ(s.failures, 0);
  EXPECT_EQ((*(*store)->QueryUsage({}))[0].prompt_tokens, 999 * 1000 / 2);
}

TEST(UsageLedgerTest, WritesWhatRemainsOnDestructionAndWithinTheInterval) {
  TempDir dir;
  auto store = OpenSqliteTenantStore(dir.File("l.db"));
  ASSERT_TRUE(store.ok());
  {
    UsageLedgerOptions opts;
    opts.flush_interval_ms = 20;
    UsageLedger ledger(**store, opts);
    ledger.Record(Rec("a", 1, 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(Count(**store), 1);  // written by the interval, no Flush
    for (int i = 0; i < 10; ++i) ledger.Record(Rec("b" + std::to_string(i), 1, 1));
  }
  EXPECT_EQ(Count(**store), 11);
}

TEST(UsageLedgerTest, FillsMissingRequestIdsAndClampsFields) {
  TempDir dir;
  auto store = OpenSqliteTenantStore(dir.File("l.db"));
  ASSERT_TRUE(store.ok());
  UsageLedger ledger(**store);
  UsageRecord r = Rec("", 10, 5);
  r.cached_tokens = 50;            // > prompt
  r.model = std::string("m\n\x01", 3);  // control bytes
  ledger.Record(r);
  ASSERT_TRUE(ledger.Flush().ok());
  auto rows = (*store)->ListUsage("", 0, INT64_MAX, 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].request_id.rfind("req_", 0), 0u);
  EXPECT_EQ((*rows)[0].cached_tokens, 10);
  EXPECT_EQ((*rows)[0].model, "m??");
}

TEST(UsageLedgerTest, KeepsBatchesWhileTheStoreIsLockedAndWritesThemAfter) {
  TempDir dir;
  const std::string path = dir.File("l.db");
  StoreOptions sopts;
  sopts.busy_timeout_ms = 20;
  auto store = OpenSqliteTenantStore(path, sopts);
  ASSERT_TRUE(store.ok());
  UsageLedgerOptions opts;
  opts.admit_high_water = 5;
  opts.max_retry_backoff_ms = 50;
  UsageLedger ledger(**store, opts);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);

  for (int i = 0; i < 10; ++i) ledger.Record(Rec("r" + std::to_string(i), 2, 3));
  Status flushed = ledger.Flush(std::chrono::milliseconds(300));
  EXPECT_EQ(flushed.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(flushed.message().find("locked"), std::string::npos) << flushed.ToString();
  EXPECT_GT(ledger.stats().failures, 0);
  EXPECT_EQ(ledger.stats().pending, 10);
  // Fail closed: the backlog is past the admission mark.
  EXPECT_EQ(ledger.AdmissionStatus().code(), StatusCode::kResourceExhausted);

  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  ASSERT_TRUE(ledger.Flush().ok());
  EXPECT_EQ(Count(**store), 10);
  EXPECT_TRUE(ledger.AdmissionStatus().ok());
  EXPECT_EQ(ledger.stats().dropped, 0);
}

TEST(UsageLedgerTest, CountsDropsPastMaxPending) {
  TempDir dir;
  const std::string path = dir.File("l.db");
  StoreOptions sopts;
  sopts.busy_timeout_ms = 10;
  auto store = OpenSqliteTenantStore(path, sopts);
  ASSERT_TRUE(store.ok());
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  {
    UsageLedgerOptions opts;
    opts.max_pending = 4;
    opts.shutdown_timeout_ms = 100;
    UsageLedger ledger(**store, opts);
    for (int i = 0; i < 6; ++i) ledger.Record(Rec("r" + std::to_string(i), 1, 1));
    EXPECT_EQ(ledger.stats().dropped, 2);
    EXPECT_EQ(ledger.stats().pending, 4);
  }  // gives up after shutdown_timeout_ms while the lock is held
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
}

// kill -9 durability: a child records through the ledger, flushes, tells
// the parent, records more and is killed mid-stream. Every flushed record is
// in the database afterwards, with its exact token counts.
TEST(UsageLedgerTest, FlushedRecordsSurviveKill9) {
  TempDir dir;
  const std::string path = dir.File("kill.db");
  ASSERT_TRUE(OpenSqliteTenantStore(path).ok());
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    auto store = OpenSqliteTenantStore(path);
    if (!store.ok()) ::_exit(2);
    UsageLedgerOptions opts;
    opts.flush_interval_ms = 5;
    UsageLedger ledger(**store, opts);
    for (int i = 0; i < 2000; ++i) ledger.Record(Rec("flushed-" + std::to_string(i), i, 2 * i));
    if (!ledger.Flush().ok()) ::_exit(3);
    const char ok = 'F';
    if (::write(pipefd[1], &ok, 1) != 1) ::_exit(4);
    for (int i = 0;; ++i) {
      ledger.Record(Rec("after-" + std::to_string(i), 1, 1));
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ::close(pipefd[1]);
  char got = 0;
  ASSERT_EQ(::read(pipefd[0], &got, 1), 1) << "the child failed before flushing";
  ::close(pipefd[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // mid-stream
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto store = OpenSqliteTenantStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto rows = (*store)->ListUsage("t1", 0, INT64_MAX, 1'000'000);
  ASSERT_TRUE(rows.ok());
  int64_t flushed = 0, prompt = 0, completion = 0, after = 0;
  for (const UsageRecord& r : *rows) {
    if (r.request_id.rfind("flushed-", 0) == 0) {
      ++flushed;
      prompt += r.prompt_tokens;
      completion += r.completion_tokens;
    } else {
      ++after;
    }
  }
  EXPECT_EQ(flushed, 2000);
  EXPECT_EQ(prompt, 1999 * 2000 / 2);
  EXPECT_EQ(completion, 1999 * 2000);
  EXPECT_GT(after, 0) << "the child was killed before any later batch committed";
}

TEST(UsageLedgerTest, MetadataLogLineHoldsOnlyMetadataFields) {
  UsageRecord r = Rec("req-1", 120, 30);
  r.cached_tokens = 100;
  r.model = "my model\n\"x\"";
  r.status = UsageStatus::kRateLimited;
  r.http_status = 429;
  r.queue_ms = 3;
  r.ttft_ms = 40;
  r.total_ms = 900;
  EXPECT_EQ(MetadataLogLine(r),
            "request_id=req-1 tenant=t1 key=key_1 model=\"my model?\\\"x\\\"\" deployment=d version=v1 "
            "service_tier=interactive status=rate_limited http_status=429 prompt_tokens=120 cached_tokens=100 completion_tokens=30 "
            "queue_ms=3 ttft_ms=40 total_ms=900 started_at_ms=1750000000000");
}

}  // namespace
}  // namespace pagoda::tenancy
