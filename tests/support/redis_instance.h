// Redis for tests: a redis-server (Debian's, 7.x) of this test's own on a
// free loopback port with a fresh directory and no persistence, killed in
// the destructor. Kill() / Restart() simulate the store going away and
// coming back (same port).
#pragma once

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pagoda::testing {

class RedisServer {
 public:
  RedisServer() {
    if (std::system("command -v redis-server >/dev/null 2>&1") != 0) {
      why_ = "redis-server is not installed (scripts/setup --tests installs it)";
      return;
    }
    dir_ = std::filesystem::temp_directory_path() /
           ("pagoda_redis_" + std::to_string(::getpid()) + "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(dir_);
    port_ = FreePort();
    if (!Restart()) why_ = "redis-server did not start on port " + std::to_string(port_);
  }
  ~RedisServer() {
    Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  std::string Uri() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  // (Re)starts on the same port; true once it answers PING.
  bool Restart() {
    Kill();
    const std::string port = std::to_string(port_);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--dir",
               dir_.c_str(), "--save", "", "--appendonly", "no", "--protected-mode", "yes", "--loglevel", "warning",
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      const std::string ping = "redis-cli -p " + port + " ping 2>/dev/null | grep -q PONG";
      if (std::system(ping.c_str()) == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }

 private:
  static int FreePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
  }
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string why_;
};

}  // namespace pagoda::testing
