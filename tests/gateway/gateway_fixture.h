// GatewayFixture: a Gateway in-process on loopback, started from a TOML
// body (with a [gateway] table of short timeouts and an admin key), driven
// with the blocking http::Client. TearDown checks that every ending path
// released its load on every replica.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/gateway.h"
#include "http/client.h"

namespace pagoda::gateway {

class GatewayFixture : public ::testing::Test {
 protected:
  void StartGateway(const std::string& body, const std::string& gateway_table = "") {
    path_ = (std::filesystem::temp_directory_path() /
             ("pagoda_gw_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++) + ".toml"))
                .string();
    Write("[gateway]\nadmin_key_env = \"GW_TEST_ADMIN\"\nallow_insecure_keys = true\nfirst_byte_timeout_ms = 500\n"
          "request_deadline_ms = " + std::to_string(deadline_ms_) +
          "\neject_after_failures = 1\ncircuit_open_ms = 60000\n" + gateway_table + body);
    GatewayOptions o;
    o.config_path = path_;
    o.listen_override = "127.0.0.1:0";
    o.health_checks = false;
    o.env = [](const std::string& n) -> std::optional<std::string> {
      if (n == "GW_TEST_ADMIN") return "admin-secret";
      if (n == "EXT_KEY") return "ext-secret";
      return std::nullopt;
    };
    auto g = Gateway::Create(o);
    ASSERT_TRUE(g.ok()) << g.status().message();
    gw_ = std::move(g).value();
    ASSERT_TRUE(gw_->Start().ok());
    client_ = std::make_unique<http::Client>("127.0.0.1", gw_->port(), std::chrono::seconds(10));
  }
  void Write(const std::string& text) {
    std::ofstream(path_) << text;
  }
  void TearDown() override {
    if (gw_) {
      // Every ending path released its load.
      EXPECT_TRUE(WaitIdle()) << "load still counted on a replica";
      gw_->Shutdown(std::chrono::seconds(1));
    }
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  bool WaitIdle() {
    for (int i = 0; i < 200; ++i) {
      bool idle = true;
      for (const auto& r : gw_->table()->AllReplicas()) {
        idle = idle && r->state().active_requests.load() == 0 && r->state().active_blocks.load() == 0;
      }
      if (idle) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  http::ClientResponse Chat(const std::string& model, bool stream = false, std::vector<std::string>* events = nullptr,
                            const http::Headers& h = {}) {
    const std::string body =
        nlohmann::json{{"model", model}, {"stream", stream}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}
            .dump();
    if (!stream) {
      auto r = client_->Send("POST", "/v1/chat/completions", body, h);
      EXPECT_TRUE(r.ok()) << r.status().message();
      return r.ok() ? *r : http::ClientResponse{};
    }
    auto r = client_->SendSse("POST", "/v1/chat/completions", body,
                              [&](std::string_view d) {
                                if (events) events->emplace_back(d);
                                return true;
                              },
                              h);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : http::ClientResponse{};
  }
  // A raw TCP connection to the gateway (a receive buffer of `rcvbuf` bytes
  // when not 0), for what the blocking client cannot do; -1 on failure.
  int ConnectRaw(int rcvbuf = 0) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(gw_->port());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  static std::string ErrorCode(const std::string& body) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("error") || !j["error"].contains("message")) return "<not an error object>";
    return j["error"].value("code", "");
  }

  std::string path_;
  int counter_ = 0;
  int64_t deadline_ms_ = 3000;  // request_deadline_ms
  std::unique_ptr<Gateway> gw_;
  std::unique_ptr<http::Client> client_;
};

}  // namespace pagoda::gateway
