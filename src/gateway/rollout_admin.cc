#include "gateway/rollout_admin.h"

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace pagoda::gateway {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::string_view kPrefix = "/admin/rollouts/";

http::Response ErrorOf(const Status& st) {
  api::ApiError e;
  e.message = st.message();
  switch (st.code()) {
    case StatusCode::kNotFound:
      e.status = 404;
      e.code = "not_found";
      break;
    case StatusCode::kFailedPrecondition:
      e.status = 409;
      e.code = "conflict";
      break;
    case StatusCode::kInvalidArgument:
      e.status = 400;
      e.code = "invalid_value";
      break;
    default:
      e.status = 500;
      e.type = "server_error";
      e.code = "server_error";
  }
  return http::Response::Json(e.status, e.ToJsonString());
}

// "%41" -> "A"; nullopt on a malformed escape.
std::optional<std::string> PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

http::Response StartRollout(RolloutController* rollouts, const http::Request& req) {
  auto spec = ParseRolloutSpec(req.body);
  if (!spec.ok()) return http::Response::Json(spec.error().status, spec.error().ToJsonString());
  auto st = rollouts->Start(std::move(spec).value(), Clock::now());
  if (!st.ok()) return ErrorOf(st.status());
  return http::Response::Json(201, st->ToJson().dump());
}

// GET /admin/rollouts/MODEL, POST /admin/rollouts/MODEL/abort.
http::Response OneRollout(RolloutController* rollouts, const http::Request& req) {
  std::string_view rest = std::string_view(req.path).substr(kPrefix.size());
  bool abort = false;
  constexpr std::string_view kAbort = "/abort";
  if (rest.size() > kAbort.size() && rest.substr(rest.size() - kAbort.size()) == kAbort) {
    abort = true;
    rest.remove_suffix(kAbort.size());
  }
  const auto model = PercentDecode(rest);
  if (!model || model->empty() || model->find('/') != std::string::npos) {
    return http::ErrorResponse(404, "No route for " + req.method + " " + req.path + ".", "not_found");
  }
  const std::string want = abort ? "POST" : "GET";
  if (req.method != want) {
    http::Response r = http::ErrorResponse(405, "Method " + req.method + " is not allowed on " + req.path + ".",
                                           "method_not_allowed");
    r.headers.Set("Allow", want);
    return r;
  }
  if (abort) {
    auto st = rollouts->Abort(*model, "aborted through the admin API", Clock::now());
    if (!st.ok()) return ErrorOf(st.status());
    return http::Response::Json(200, st->ToJson().dump());
  }
  auto st = rollouts->Get(*model, Clock::now());
  if (!st) return ErrorOf(NotFound("no rollout of '" + *model + "'"));
  return http::Response::Json(200, st->ToJson().dump());
}

}  // namespace

void AddRolloutRoutes(http::Router& router, RolloutController* rollouts) {
  router.Add("POST", "/admin/rollouts",
             http::SyncHandler([rollouts](const http::Request& req) { return StartRollout(rollouts, req); }));
  router.Add("GET", "/admin/rollouts", http::SyncHandler([rollouts](const http::Request&) {
               nlohmann::json list = nlohmann::json::array();
               for (const RolloutStatus& s : rollouts->All(Clock::now())) list.push_back(s.ToJson());
               return http::Response::Json(200, nlohmann::json{{"rollouts", list}}.dump());
             }));
  router.AddPrefix(std::string(kPrefix), http::Handler([rollouts](const http::Request& req,
                                                                   std::shared_ptr<http::ResponseWriter> w) {
                     w->Respond(OneRollout(rollouts, req));
                   }));
}

}  // namespace pagoda::gateway
