// Test support for the tenancy layer: temporary directories, the two store
// backends behind one interface (a SQLite file in a temp dir, a fresh
// PostgreSQL database), a byte scanner for "this secret must not be on
// disk" checks, and running a check as an unprivileged user.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/postgres_instance.h"
#include "tenancy/sqlite_tenant_store.h"
#include "tenancy/tenant_store.h"

namespace pagoda::tenancy::testsupport {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("pagoda_tenancy_" + std::to_string(::getpid()) + "_" + std::to_string(rd() % 10000000));
    fs::create_directories(path_);
    fs::permissions(path_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// One database, as many store objects on it as a test asks for (each stands
// in for another gateway process).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual bool ok() const = 0;
  virtual std::string why() const = 0;
  virtual std::string url() const = 0;
  Result<std::unique_ptr<TenantStore>> Open(StoreOptions options = {}) { return OpenTenantStore(url(), options); }
  // Files that hold the database's bytes (PostgreSQL: after a CHECKPOINT).
  virtual std::vector<fs::path> Files() = 0;

  static std::unique_ptr<Backend> Make(const std::string& kind);
};

class SqliteBackend final : public Backend {
 public:
  bool ok() const override { return true; }
  std::string why() const override { return ""; }
  std::string url() const override { return "sqlite://" + dir_.File("pagoda.db"); }
  std::vector<fs::path> Files() override {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_.path())) out.push_back(e.path());  // .db, -wal, -shm
    return out;
  }

 private:
  TempDir dir_;
};

class PostgresBackend final : public Backend {
 public:
  bool ok() const override { return db_.ok(); }
  std::string why() const override { return db_.why(); }
  std::string url() const override { return db_.uri(); }
  std::vector<fs::path> Files() override {
    db_.server()->Psql("postgres", "CHECKPOINT");
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(db_.server()->DataDir(), ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file(ec)) out.push_back(it->path());
    }
    return out;
  }

 private:
  pagoda::testing::FreshDatabase db_;
};

inline std::unique_ptr<Backend> Backend::Make(const std::string& kind) {
  if (kind == "sqlite") return std::make_unique<SqliteBackend>();
  return std::make_unique<PostgresBackend>();
}

// Which of `needles` (all starting with `prefix`) occur in any of `files`.
inline std::vector<std::string> FindInFiles(const std::vector<fs::path>& files, const std::string& prefix,
                                            const std::vector<std::string>& needles) {
  std::vector<std::string> found;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t pos = bytes.find(prefix); pos != std::string::npos; pos = bytes.find(prefix, pos + 1)) {
      for (const std::string& n : needles) {
        if (bytes.compare(pos, n.size(), n) == 0) found.push_back(n + " in " + f.string());
      }
    }
  }
  return found;
}

// Runs `fn` in a child process; as root the child first drops to `nobody`
// so that file permissions apply. Returns the child's exit code (fn's
// return), or -1 when it died.
inline int RunUnprivileged(const std::function<int()>& fn) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(99);
    }
    ::_exit(fn());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace pagoda::tenancy::testsupport
