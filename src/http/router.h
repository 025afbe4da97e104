// Router: (method, path) -> Handler, exact path match (the query is ignored),
// then optional prefix handlers.
// Unknown path: 404; known path, other method: 405 with an Allow header; both
// with an OpenAI-style error body. Built before the server starts, read-only
// afterwards (so I/O threads read it without locks).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <vector>
#include <memory>
#include <string>
#include <utility>

#include "http/response_writer.h"

namespace pagoda::http {

class Router {
 public:
  void Add(std::string method, std::string path, Handler handler);
  void Add(std::string method, std::string path, SyncHandler handler);
  // Runs before every route: a non-empty result answers the request instead
  // (used for authentication of a path prefix). Optional.
  // Any method on any path under `path_prefix` that no exact route matches
  // (generic proxying). The longest matching prefix wins.
  void AddPrefix(std::string path_prefix, Handler handler);
  using Guard = std::function<std::optional<Response>(const Request&)>;
  void AddGuard(std::string path_prefix, Guard guard);

  void Dispatch(const Request& request, std::shared_ptr<ResponseWriter> writer) const;

 private:
  std::map<std::pair<std::string, std::string>, Handler> routes_;  // (path, method)
  std::vector<std::pair<std::string, Guard>> guards_;
  std::map<std::string, Handler> prefixes_;
};

}  // namespace pagoda::http
