// The three CounterStore backends for tests: a fresh SQLite file, a fresh
// PostgreSQL database (FreshDatabase) and a fresh redis-server (RedisServer),
// each owned by one test. ok() is false (with why()) when the backend is not
// installed; the test then skips.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/postgres_instance.h"
#include "support/redis_instance.h"
#include "support/test_paths.h"
#include "tenancy/counter_store.h"

namespace pagoda::tenancy::testing {

class Backend {
 public:
  explicit Backend(const std::string& kind) : kind_(kind) {
    if (kind == "sqlite") {
      static std::atomic<int> n{0};
      path_ = pagoda::testing::TempDirForProcess() / ("counters_" + std::to_string(n++) + ".db");
      std::filesystem::remove(path_);
      url_ = "sqlite://" + path_.string();
    } else if (kind == "postgres") {
      pg_ = std::make_unique<pagoda::testing::FreshDatabase>();
      if (!pg_->ok()) why_ = pg_->why();
      else url_ = pg_->uri();
    } else {
      redis_ = std::make_unique<pagoda::testing::RedisServer>();
      if (!redis_->ok()) why_ = redis_->why();
      else url_ = redis_->Uri();
    }
  }
  ~Backend() {
    if (!path_.empty()) {
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + suffix, ec);
    }
  }

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  const std::string& kind() const { return kind_; }
  const std::string& url() const { return url_; }
  pagoda::testing::RedisServer* redis() const { return redis_.get(); }
  pagoda::testing::FreshDatabase* postgres() const { return pg_.get(); }
  const std::filesystem::path& path() const { return path_; }

  std::unique_ptr<CounterStore> Open(const CounterStoreOptions& options = {}) const {
    auto s = OpenCounterStore(url_, options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

 private:
  std::string kind_;
  std::string url_;
  std::string why_;
  std::filesystem::path path_;
  std::unique_ptr<pagoda::testing::FreshDatabase> pg_;
  std::unique_ptr<pagoda::testing::RedisServer> redis_;
};

inline const std::vector<std::string>& AllBackends() {
  static const std::vector<std::string> kinds = {"sqlite", "postgres", "redis"};
  return kinds;
}

// A fixed time at the start of a 60 s window (and of a 2 s one), so tests
// that inject `now` know where windows begin.
constexpr int64_t kT0 = int64_t{28'333'334} * 60'000;

}  // namespace pagoda::tenancy::testing
