#include "admin_client.h"

#include <chrono>
#include <future>

#include <nlohmann/json.hpp>

namespace pagoda::cli {
namespace {

constexpr size_t kMaxReplyBytes = 256u << 20;  // a year of per-key daily usage fits many times over

}  // namespace

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<std::unique_ptr<AdminClient>> AdminClient::Create(std::string_view url, std::string admin_key,
                                                         std::string ca_file) {
  auto endpoint = gateway::ParseEndpoint(url);
  if (!endpoint.ok()) return InvalidArgument("--url: " + endpoint.status().message());
  if (endpoint->scheme == "http" && !ca_file.empty()) return InvalidArgument("--ca-file applies to https:// only");
  return std::unique_ptr<AdminClient>(new AdminClient(std::move(*endpoint), std::move(admin_key), std::move(ca_file)));
}

AdminClient::AdminClient(gateway::Endpoint endpoint, std::string admin_key, std::string ca_file)
    : endpoint_(std::move(endpoint)),
      admin_key_(std::move(admin_key)),
      ca_file_(std::move(ca_file)),
      client_(http::UpstreamClientOptions{.io_threads = 1, .max_idle_per_host = 1}) {}

Result<AdminReply> AdminClient::Call(std::string_view method, std::string_view path,
                                     const std::map<std::string, std::string>& query, std::string_view body) {
  http::UpstreamRequest req;
  req.host = endpoint_.host;
  req.port = endpoint_.port;
  req.tls = endpoint_.scheme == "https";
  req.ca_file = ca_file_;
  req.method = std::string(method);
  req.target = endpoint_.base_path + std::string(path);
  char sep = '?';
  for (const auto& [name, value] : query) {
    req.target += sep + UrlEncode(name) + "=" + UrlEncode(value);
    sep = '&';
  }
  req.headers.Add("Authorization", "Bearer " + admin_key_);
  req.headers.Add("Accept", "application/json, text/csv");
  if (!body.empty()) req.headers.Add("Content-Type", "application/json");
  req.body = std::string(body);
  req.connect_timeout = std::chrono::seconds(10);
  req.first_byte_timeout = std::chrono::seconds(120);

  auto reply = std::make_shared<AdminReply>();
  auto too_big = std::make_shared<bool>(false);
  auto done = std::make_shared<std::promise<http::UpstreamOutcome>>();
  auto finished = done->get_future();
  http::UpstreamEvents ev;
  ev.on_head = [reply](const http::UpstreamResponseHead& head) {
    reply->status = head.status;
    if (const std::string* ct = head.headers.Find("Content-Type")) reply->content_type = *ct;
  };
  ev.on_body = [reply, too_big](std::string_view bytes) {
    if (reply->body.size() + bytes.size() > kMaxReplyBytes) {
      *too_big = true;
      return;
    }
    reply->body.append(bytes);
  };
  ev.on_done = [done](const http::UpstreamOutcome& outcome) { done->set_value(outcome); };
  auto call = client_.Start(std::move(req), std::move(ev));
  const http::UpstreamOutcome outcome = finished.get();
  const std::string where = method.empty() ? endpoint_.ToString() : std::string(method) + " " +
                                                                        endpoint_.ToString() + std::string(path);
  if (outcome.error != http::UpstreamError::kNone) {
    return IoError("cannot reach the admin API (" + where + "): " + http::UpstreamErrorName(outcome.error) +
                   (outcome.message.empty() ? "" : ": " + outcome.message));
  }
  if (*too_big) return IoError(where + ": the reply is larger than " + std::to_string(kMaxReplyBytes) + " bytes");
  return std::move(*reply);
}

std::string AdminClient::ErrorOf(const AdminReply& reply) {
  std::string msg;
  const auto j = nlohmann::json::parse(reply.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
      j["error"]["message"].is_string()) {
    msg = j["error"]["message"].get<std::string>();
    if (j["error"].contains("param") && j["error"]["param"].is_string()) {
      msg += " (param: " + j["error"]["param"].get<std::string>() + ")";
    }
  } else {
    msg = reply.body.substr(0, 300);
  }
  return "HTTP " + std::to_string(reply.status) + ": " + msg;
}

}  // namespace pagoda::cli
