// BatchStore on both backends: tenant isolation, pagination, exactly-once
// line commits with their usage records, state transitions.
#include "batch/batch_store.h"

#include <gtest/gtest.h>

#include "tenancy/store_backends.h"

namespace pagoda::batch {
namespace {

using tenancy::testsupport::Backend;

class BatchStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = Backend::Make(GetParam());
    if (!backend_->ok()) GTEST_SKIP() << backend_->why();
    auto s = BatchStore::Open(backend_->url());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  FileRecord File(const std::string& id, const std::string& tenant, int64_t created) {
    FileRecord f;
    f.id = id;
    f.tenant_id = tenant;
    f.purpose = "batch";
    f.filename = id + ".jsonl";
    f.bytes = 10;
    f.lines = 2;
    f.created_at = created;
    return f;
  }

  BatchRecord Batch(const std::string& id, const std::string& tenant, int64_t created) {
    BatchRecord b;
    b.id = id;
    b.tenant_id = tenant;
    b.key_id = "key_1";
    b.endpoint = "/v1/chat/completions";
    b.input_file_id = "file-in";
    b.created_at = created;
    b.expires_at = created + 86'400'000;
    return b;
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<BatchStore> store_;
};

TEST_P(BatchStoreTest, AnotherTenantsFileOrBatchIsNotFound) {
  ASSERT_TRUE(store_->CreateFile(File("file-a", "t1", 1000)).ok());
  ASSERT_TRUE(store_->CreateBatch(Batch("batch_a", "t1", 1000)).ok());
  EXPECT_TRUE(store_->GetFile("t1", "file-a").ok());
  EXPECT_EQ(store_->GetFile("t2", "file-a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetBatch("t2", "batch_a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Cancel("t2", "batch_a", 2000).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->MarkFileDeleted("t2", "file-a", 2000).code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->ListFiles("t2", "", {}).value().empty());
  EXPECT_TRUE(store_->ListBatches("t2", {}).value().empty());
  EXPECT_TRUE(store_->MarkFileDeleted("t1", "file-a", 2000).ok());
  EXPECT_EQ(store_->GetFile("t1", "file-a").status().code(), StatusCode::kNotFound);
}

TEST_P(BatchStoreTest, ListsPageNewestFirstAfterACursor) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store_->CreateBatch(Batch("batch_" + std::to_string(i), "t", 1000 + i)).ok());
  auto first = store_->ListBatches("t", ListPage{"", 2});
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 3u);  // limit + 1: more follow
  EXPECT_EQ((*first)[0].id, "batch_4");
  EXPECT_EQ((*first)[1].id, "batch_3");
  auto next = store_->ListBatches("t", ListPage{"batch_3", 2});
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 3u);
  EXPECT_EQ((*next)[0].id, "batch_2");
  auto last = store_->ListBatches("t", ListPage{"batch_1", 2});
  ASSERT_EQ(last->size(), 1u);
  EXPECT_EQ((*last)[0].id, "batch_0");
}

TEST_P(BatchStoreTest, ALineIsCommittedOnceWithItsUsage) {
  ASSERT_TRUE(store_->CreateBatch(Batch("batch_x", "t", 1000)).ok());
  std::vector<LineRecord> lines(3);
  for (int i = 0; i < 3; ++i) {
    lines[i].line_no = i + 1;
    lines[i].custom_id = "c" + std::to_string(i);
    lines[i].request_id = "batch_req_" + std::to_string(i);
  }
  lines[2].state = LineState::kError;  // invalid input
  lines[2].result_offset = 0;
  lines[2].result_length = 5;
  ASSERT_TRUE(store_->StartBatch("batch_x", lines, RequestCounts{3, 0, 1}, 2000).ok());
  EXPECT_EQ(store_->StartBatch("batch_x", lines, RequestCounts{3, 0, 1}, 2000).code(),
            StatusCode::kFailedPrecondition);  // not validating any more
  auto pending = store_->PendingLines("batch_x", 0, 10);
  ASSERT_EQ(pending->size(), 2u);

  tenancy::UsageRecord u;
  u.request_id = "batch_req_0";
  u.tenant_id = "t";
  u.key_id = "key_1";
  u.model = "m";
  u.deployment = "m";
  u.prompt_tokens = 7;
  u.completion_tokens = 5;
  u.started_at_ms = 3000;
  u.service_tier = WorkloadClass::kBatch;
  LineCommit c{1, LineState::kDone, 200, 5, 40, u};
  EXPECT_EQ(*store_->CommitLines("batch_x", std::vector<LineCommit>{c}), 1);
  // The same line again (a rerun after a crash): ignored, counted once.
  LineCommit again = c;
  again.result_offset = 45;
  again.usage->completion_tokens = 9;
  EXPECT_EQ(*store_->CommitLines("batch_x", std::vector<LineCommit>{again}), 0);
  auto b = store_->GetBatch("t", "batch_x");
  EXPECT_EQ(b->counts.completed, 1);
  EXPECT_EQ(b->counts.failed, 1);
  EXPECT_EQ(b->status, BatchStatus::kInProgress);
  auto all = store_->Lines("batch_x", 0, 10);
  EXPECT_EQ((*all)[0].state, LineState::kDone);
  EXPECT_EQ((*all)[0].result_offset, 5);  // the first answer stands
  EXPECT_EQ((*all)[0].result_length, 40);

  auto tenants = tenancy::OpenTenantStore(backend_->url());
  ASSERT_TRUE(tenants.ok());
  auto records = (*tenants)->ListUsage("t", 0, INT64_MAX, 10);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].completion_tokens, 5);
  EXPECT_EQ((*records)[0].service_tier, WorkloadClass::kBatch);
}

TEST_P(BatchStoreTest, CancelMovesOnlyRunningBatches) {
  ASSERT_TRUE(store_->CreateBatch(Batch("batch_c", "t", 1000)).ok());
  auto c = store_->Cancel("t", "batch_c", 1500);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status, BatchStatus::kCancelling);
  EXPECT_EQ(c->cancelling_at, 1500);
  EXPECT_TRUE(store_->Cancel("t", "batch_c", 1600).ok());  // idempotent
  ASSERT_TRUE(store_->Finish("batch_c", std::nullopt, std::nullopt, BatchStatus::kCancelled, 1700).ok());
  ASSERT_TRUE(store_->CreateBatch(Batch("batch_d", "t", 1000)).ok());
  ASSERT_TRUE(store_->Finish("batch_d", std::nullopt, std::nullopt, BatchStatus::kCompleted, 1700).ok());
  EXPECT_EQ(store_->Cancel("t", "batch_d", 1800).status().code(), StatusCode::kFailedPrecondition);
  auto active = store_->ActiveBatches();
  EXPECT_TRUE(active->empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchStoreTest, ::testing::Values("sqlite", "postgres"));

}  // namespace
}  // namespace pagoda::batch
