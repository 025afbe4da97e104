#include "gateway/schedule_admin.h"

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace pagoda::gateway {
namespace {

constexpr std::string_view kPrefix = "/admin/schedules/";

http::Response Error(int status, const char* code, std::string message) {
  api::ApiError e;
  e.status = status;
  e.code = code;
  e.message = std::move(message);
  return http::Response::Json(status, e.ToJsonString());
}

http::Response ErrorOf(const Status& st) {
  if (st.code() == StatusCode::kNotFound) return Error(404, "not_found", st.message());
  if (st.code() == StatusCode::kInvalidArgument) return Error(400, "invalid_value", "Invalid schedule: " + st.message());
  return Error(500, "server_error", st.message());
}

// "%2F" -> "/" (a path: '+' stays '+'); nullopt on a malformed escape.
std::optional<std::string> DecodePathSegment(std::string_view s) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

http::Response OneDeployment(CapacityScheduler* schedules, const http::Request& req) {
  const std::string_view path = std::string_view(req.path).substr(kPrefix.size());
  const size_t slash = path.rfind('/');
  const auto model = slash == std::string_view::npos ? std::nullopt : DecodePathSegment(path.substr(0, slash));
  const auto version = slash == std::string_view::npos ? std::nullopt : DecodePathSegment(path.substr(slash + 1));
  if (!model || !version || model->empty() || version->empty()) {
    return Error(404, "not_found", "No route for " + req.method + " " + req.path +
                                       " (expected /admin/schedules/MODEL/VERSION).");
  }
  if (req.method == "PUT") {
    const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) return Error(400, "invalid_json", "The request body is not valid JSON.");
    auto schedule = ScheduleFromJson(body);
    if (!schedule.ok()) return ErrorOf(schedule.status());
    if (Status st = schedules->Set(*model, *version, std::move(schedule).value()); !st.ok()) return ErrorOf(st);
  } else if (req.method == "DELETE") {
    if (Status st = schedules->Remove(*model, *version); !st.ok()) return ErrorOf(st);
  } else if (req.method != "GET") {
    http::Response r = http::ErrorResponse(405, "Method " + req.method + " is not allowed on " + req.path + ".",
                                           "method_not_allowed");
    r.headers.Set("Allow", "GET, PUT, DELETE");
    return r;
  }
  auto entry = schedules->DeploymentJson(*model, *version);
  if (!entry) return ErrorOf(NotFound("no deployment '" + *model + "@" + *version + "'"));
  return http::Response::Json(200, entry->dump());
}

}  // namespace

void AddScheduleRoutes(http::Router& router, CapacityScheduler* schedules) {
  router.Add("GET", "/admin/schedules", http::SyncHandler([schedules](const http::Request&) {
               return http::Response::Json(200, schedules->ToJson().dump());
             }));
  router.AddPrefix(std::string(kPrefix), http::Handler([schedules](const http::Request& req,
                                                                    std::shared_ptr<http::ResponseWriter> w) {
                     w->Respond(OneDeployment(schedules, req));
                   }));
}

}  // namespace pagoda::gateway
