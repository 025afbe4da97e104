#include "http/router.h"

#include <string>

namespace pagoda::http {

void Router::Add(std::string method, std::string path, Handler handler) {
  routes_[{std::move(path), std::move(method)}] = std::move(handler);
}

void Router::Add(std::string method, std::string path, SyncHandler handler) {
  Add(std::move(method), std::move(path),
      Handler([h = std::move(handler)](const Request& req, std::shared_ptr<ResponseWriter> w) {
        w->Respond(h(req));
      }));
}

void Router::AddPrefix(std::string path_prefix, Handler handler) {
  prefixes_[std::move(path_prefix)] = std::move(handler);
}

void Router::AddGuard(std::string path_prefix, Guard guard) {
  guards_.emplace_back(std::move(path_prefix), std::move(guard));
}

void Router::Dispatch(const Request& request, std::shared_ptr<ResponseWriter> writer) const {
  for (const auto& [prefix, guard] : guards_) {
    if (request.path.compare(0, prefix.size(), prefix) == 0) {
      if (auto denied = guard(request)) {
        writer->Respond(std::move(*denied));
        return;
      }
    }
  }
  const auto it = routes_.find({request.path, request.method});
  if (it != routes_.end()) {
    it->second(request, std::move(writer));
    return;
  }
  std::string allow;
  for (auto r = routes_.lower_bound({request.path, ""}); r != routes_.end() && r->first.first == request.path; ++r) {
    if (!allow.empty()) allow += ", ";
    allow += r->first.second;
  }
  if (allow.empty()) {
    // Longest prefix first: map order puts "/v1/" before "/v1/x", so scan backwards.
    for (auto p = prefixes_.rbegin(); p != prefixes_.rend(); ++p) {
      if (request.path.compare(0, p->first.size(), p->first) == 0) {
        p->second(request, std::move(writer));
        return;
      }
    }
    writer->Respond(ErrorResponse(404, "No route for " + request.method + " " + request.path + ".", "not_found"));
    return;
  }
  Response r = ErrorResponse(405, "Method " + request.method + " is not allowed on " + request.path + ".",
                             "method_not_allowed");
  r.headers.Set("Allow", allow);
  writer->Respond(std::move(r));
}

}  // namespace pagoda::http
