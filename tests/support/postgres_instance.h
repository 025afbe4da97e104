// PostgreSQL for tests: the run's shared loopback server (started by the
// ctest fixture `postgres_server`, tests/support/pg_fixture.sh, port in
// $PAGODA_BINARY_DIR/test-postgres/port), or, when a test binary runs by
// hand without it, a server this process starts for itself and stops at
// exit. Each test takes a fresh database (FreshDatabase) and drops it when
// done, so cases never see each other's rows.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

namespace pagoda::testing {

class PostgresServer {
 public:
  // The shared server, or nullptr (with *why) when PostgreSQL is not installed.
  static PostgresServer* Get(std::string* why) {
    static std::unique_ptr<PostgresServer> server = [] {
      auto s = std::unique_ptr<PostgresServer>(new PostgresServer());
      const std::filesystem::path run_dir = std::filesystem::path(PAGODA_BINARY_DIR) / "test-postgres";
      if (ReadPort(run_dir / "port", &s->port_) && s->Psql("postgres", "SELECT 1")) return s;
      // Our own: started now, stopped at exit.
      s->own_dir_ = std::filesystem::temp_directory_path() / ("pagoda_pg_" + std::to_string(::getpid()));
      const std::string cmd = Script() + " start " + s->own_dir_.string() + " >/dev/null 2>&1";
      if (std::system(cmd.c_str()) != 0 || !ReadPort(s->own_dir_ / "port", &s->port_)) return std::unique_ptr<PostgresServer>();
      return s;
    }();
    if (!server && why) *why = "PostgreSQL 15 is not installed (scripts/setup --tests installs it)";
    return server.get();
  }

  ~PostgresServer() {
    if (!own_dir_.empty()) {
      const std::string cmd = Script() + " stop " + own_dir_.string() + " >/dev/null 2>&1";
      (void)std::system(cmd.c_str());
    }
  }

  int port() const { return port_; }
  // libpq connection string for `db`.
  std::string Uri(const std::string& db) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + db;
  }
  // Runs one SQL statement with psql as the superuser; true on success.
  bool Psql(const std::string& db, const std::string& sql) const {
    const std::string cmd = "psql -X -q -h 127.0.0.1 -p " + std::to_string(port_) + " -U postgres -d " + db +
                            " -v ON_ERROR_STOP=1 -c \"" + sql + "\" >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  }
  // The data directory of the shared server (for scanning database files).
  std::filesystem::path DataDir() const {
    const std::filesystem::path run_dir =
        own_dir_.empty() ? std::filesystem::path(PAGODA_BINARY_DIR) / "test-postgres" : own_dir_;
    std::ifstream in(run_dir / "datadir");
    std::string d;
    std::getline(in, d);
    return d;
  }

 private:
  PostgresServer() = default;
  static std::string Script() { return std::string(PAGODA_SOURCE_DIR) + "/tests/support/pg_fixture.sh"; }
  static bool ReadPort(const std::filesystem::path& f, int* port) {
    std::ifstream in(f);
    return static_cast<bool>(in >> *port) && *port > 0;
  }
  int port_ = 0;
  std::filesystem::path own_dir_;
};

// A database of its own for one test, dropped in the destructor.
class FreshDatabase {
 public:
  // Skips the test (GTEST_SKIP in the caller) when ok() is false.
  FreshDatabase() {
    server_ = PostgresServer::Get(&why_);
    if (!server_) return;
    std::random_device rd;
    name_ = "pagoda_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd() % 1000000);
    if (!server_->Psql("postgres", "CREATE DATABASE " + name_)) {
      why_ = "CREATE DATABASE failed on the test server (port " + std::to_string(server_->port()) + ")";
      server_ = nullptr;
    }
  }
  ~FreshDatabase() {
    if (server_) (void)server_->Psql("postgres", "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  }
  FreshDatabase(const FreshDatabase&) = delete;
  FreshDatabase& operator=(const FreshDatabase&) = delete;

  bool ok() const { return server_ != nullptr; }
  const std::string& why() const { return why_; }
  const std::string& name() const { return name_; }
  std::string uri() const { return server_->Uri(name_); }
  PostgresServer* server() const { return server_; }

 private:
  PostgresServer* server_ = nullptr;
  std::string name_;
  std::string why_;
};

}  // namespace pagoda::testing
