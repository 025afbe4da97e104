#include "batch/batch_routes.h"

#include <charconv>
#include <memory>

#include <nlohmann/json.hpp>

#include "batch/batch_json.h"
#include "http/multipart.h"

namespace pagoda::batch {
namespace {

using nlohmann::json;

http::Response Error(const Status& st) {
  const int status = HttpStatusOf(st);
  const char* code = status == 404 ? "not_found" : status == 409 ? "conflict" : status == 413 ? "file_too_large"
                     : status >= 500                            ? "server_error"
                                                                : "invalid_request";
  return http::ErrorResponse(status, st.message(), code);
}

http::Response Ok(const json& j) { return http::Response::Json(200, j.dump(-1, ' ', false, json::error_handler_t::replace)); }

int FromHex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The decoded value of `key` in a query string ("" when absent).
std::string QueryParam(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    std::string out;
    std::string_view v = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '+') {
        out += ' ';
      } else if (v[i] == '%' && i + 2 < v.size() + 0 && FromHex(v[i + 1]) >= 0 && FromHex(v[i + 2]) >= 0) {
        out += static_cast<char>(FromHex(v[i + 1]) * 16 + FromHex(v[i + 2]));
        i += 2;
      } else {
        out += v[i];
      }
    }
    return out;
  }
  return {};
}

Result<ListPage> PageOf(const http::Request& r) {
  ListPage page;
  page.after = QueryParam(r.query, "after");
  const std::string limit = QueryParam(r.query, "limit");
  if (!limit.empty()) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), v);
    if (ec != std::errc() || p != limit.data() + limit.size() || v < 1 || v > 10000) {
      return InvalidArgument("limit must be an integer from 1 to 10000");
    }
    page.limit = v;
  }
  return page;
}

// The id after `prefix` and what follows it: "/v1/files/file-1/content" -> ("file-1", "content").
std::pair<std::string, std::string> SplitId(std::string_view path, std::string_view prefix) {
  std::string_view rest = path.substr(prefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return {std::string(rest), ""};
  return {std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
}

template <class T>
json Listing(std::vector<T> rows, int64_t limit, json (*render)(const T&)) {
  const bool has_more = static_cast<int64_t>(rows.size()) > limit;
  if (has_more) rows.resize(static_cast<size_t>(limit));
  std::vector<json> data;
  std::vector<std::string> ids;
  for (const T& r : rows) {
    data.push_back(render(r));
    ids.push_back(r.id);
  }
  return ListJson(std::move(data), ids, has_more);
}

struct Routes {
  BatchService* service;
  Authorize authorize;
  std::string how_to_enable;

  // Runs `fn(owner)` once the caller is authorized; answers its response.
  template <class Fn>
  void Guarded(const http::Request& r, const std::shared_ptr<http::ResponseWriter>& w, Fn fn) const {
    if (service == nullptr) {
      w->Respond(http::ErrorResponse(503, "the Files and Batch APIs are off: " + how_to_enable, "batch_disabled"));
      return;
    }
    auto who = authorize(r);
    if (auto* refused = std::get_if<http::Response>(&who)) {
      w->Respond(std::move(*refused));
      return;
    }
    w->Respond(fn(std::get<Owner>(who)));
  }

  http::Response UploadFile(const http::Request& r, const Owner& owner) const {
    const std::string* ct = r.headers.Find("content-type");
    auto parts = http::ParseMultipartForm(ct ? *ct : "", r.body);
    if (!parts.ok()) return Error(parts.status());
    std::string purpose;
    const http::FormPart* file = nullptr;
    for (const http::FormPart& p : *parts) {
      if (p.name == "purpose") purpose = std::string(p.data);
      if (p.name == "file") file = &p;
    }
    if (file == nullptr) return Error(InvalidArgument("file: a multipart part named \"file\" is required"));
    if (purpose.empty()) return Error(InvalidArgument("purpose: required (\"batch\")"));
    auto f = service->Upload(owner, file->filename.value_or(""), purpose, std::string(file->data));
    if (!f.ok()) return Error(f.status());
    return Ok(FileJson(*f));
  }

  http::Response ListFiles(const http::Request& r, const Owner& owner) const {
    auto page = PageOf(r);
    if (!page.ok()) return Error(page.status());
    auto rows = service->store().ListFiles(owner.tenant_id, QueryParam(r.query, "purpose"), *page);
    if (!rows.ok()) return Error(rows.status());
    return Ok(Listing<FileRecord>(std::move(rows).value(), page->limit, &FileJson));
  }

  void FileRoute(const http::Request& r, const std::shared_ptr<http::ResponseWriter>& w) const {
    auto [id, rest] = SplitId(r.path, "/v1/files/");
    if (id.empty() || (!rest.empty() && rest != "content")) {
      w->Respond(http::ErrorResponse(404, "Not found: " + r.path, "not_found"));
      return;
    }
    const bool get = r.method == "GET";
    if (!(get || (r.method == "DELETE" && rest.empty()))) {
      http::Response resp = http::ErrorResponse(405, "method " + r.method + " is not allowed here", "method_not_allowed");
      resp.headers.Add("allow", rest.empty() ? "GET, DELETE" : "GET");
      w->Respond(std::move(resp));
      return;
    }
    Guarded(r, w, [&](const Owner& owner) -> http::Response {
      if (r.method == "DELETE") {
        if (Status st = service->DeleteFile(owner, id); !st.ok()) return Error(st);
        return Ok(json{{"id", id}, {"object", "file"}, {"deleted", true}});
      }
      if (rest == "content") {
        auto bytes = service->FileContent(owner, id);
        if (!bytes.ok()) return Error(bytes.status());
        http::Response resp;
        resp.status = 200;
        resp.content_type = "application/jsonl";
        resp.body = std::move(bytes).value();
        return resp;
      }
      auto f = service->GetFile(owner, id);
      if (!f.ok()) return Error(f.status());
      return Ok(FileJson(*f));
    });
  }

  http::Response CreateBatch(const http::Request& r, const Owner& owner) const {
    json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return Error(InvalidArgument("the body must be a JSON object"));
    auto str = [&](const char* key) -> std::optional<std::string> {
      auto it = j.find(key);
      if (it == j.end() || !it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    auto input = str("input_file_id");
    if (!input) return Error(InvalidArgument("input_file_id: required string"));
    auto endpoint = str("endpoint");
    if (!endpoint) return Error(InvalidArgument("endpoint: required string"));
    auto window = str("completion_window");
    if (!window) return Error(InvalidArgument("completion_window: required string (\"24h\")"));
    std::string metadata = "null";
    if (auto m = j.find("metadata"); m != j.end()) metadata = m->dump();
    auto b = service->CreateBatch(owner, *input, *endpoint, *window, metadata);
    if (!b.ok()) return Error(b.status());
    return Ok(BatchJson(*b));
  }

  http::Response ListBatches(const http::Request& r, const Owner& owner) const {
    auto page = PageOf(r);
    if (!page.ok()) return Error(page.status());
    auto rows = service->store().ListBatches(owner.tenant_id, *page);
    if (!rows.ok()) return Error(rows.status());
    return Ok(Listing<BatchRecord>(std::move(rows).value(), page->limit, &BatchJson));
  }

  void BatchRoute(const http::Request& r, const std::shared_ptr<http::ResponseWriter>& w) const {
    auto [id, rest] = SplitId(r.path, "/v1/batches/");
    if (id.empty() || (!rest.empty() && rest != "cancel")) {
      w->Respond(http::ErrorResponse(404, "Not found: " + r.path, "not_found"));
      return;
    }
    const char* allowed = rest.empty() ? "GET" : "POST";
    if (r.method != allowed) {
      http::Response resp = http::ErrorResponse(405, "method " + r.method + " is not allowed here", "method_not_allowed");
      resp.headers.Add("allow", allowed);
      w->Respond(std::move(resp));
      return;
    }
    Guarded(r, w, [&](const Owner& owner) -> http::Response {
      auto b = rest.empty() ? service->store().GetBatch(owner.tenant_id, id) : service->Cancel(owner, id);
      if (!b.ok()) return Error(b.status());
      return Ok(BatchJson(*b));
    });
  }
};

}  // namespace

int HttpStatusOf(const Status& st) {
  switch (st.code()) {
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kResourceExhausted:
      return 413;
    case StatusCode::kIoError:
      return 503;
    default:
      return 500;
  }
}

void AddBatchRoutes(http::Router& router, BatchService* service, Authorize authorize, std::string how_to_enable) {
  auto routes = std::make_shared<const Routes>(Routes{service, std::move(authorize), std::move(how_to_enable)});
  auto sync = [routes](http::Response (Routes::*fn)(const http::Request&, const Owner&) const) {
    return http::Handler([routes, fn](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
      routes->Guarded(r, w, [&](const Owner& owner) { return ((*routes).*fn)(r, owner); });
    });
  };
  router.Add("POST", "/v1/files", sync(&Routes::UploadFile));
  router.Add("GET", "/v1/files", sync(&Routes::ListFiles));
  router.AddPrefix("/v1/files/", http::Handler([routes](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
                     routes->FileRoute(r, w);
                   }));
  router.Add("POST", "/v1/batches", sync(&Routes::CreateBatch));
  router.Add("GET", "/v1/batches", sync(&Routes::ListBatches));
  router.AddPrefix("/v1/batches/", http::Handler([routes](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
                     routes->BatchRoute(r, w);
                   }));
}

}  // namespace pagoda::batch
