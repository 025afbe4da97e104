#include "console/console_routes.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
#include <string>

namespace pagoda::console {
namespace {

// Keeps the one response a handler gives.
class CapturingWriter : public http::ResponseWriter {
 public:
  bool Respond(http::Response r) override {
    response = std::move(r);
    return true;
  }
  bool BeginSse(http::Headers) override { return false; }
  bool SendSse(std::string_view) override { return false; }
  bool SendSseEvents(std::string_view) override { return false; }
  void EndSse() override {}
  void OnCancel(std::function<void()>) override {}
  bool cancelled() const override { return false; }
  size_t queued_bytes() const override { return 0; }
  std::optional<http::Response> response;
};

constexpr unsigned char kIndex[] = {'<', 'h', '1', '>', 'h', 'i', '<', '/', 'h', '1', '>'};
constexpr unsigned char kScript[] = {'x', '=', '1', ';'};
const std::array<ConsoleAsset, 2> kAssets = {{
    {"/index.html", "text/html; charset=utf-8", "\"aaaa\"", kIndex, false},
    {"/assets/index-1234.js", "text/javascript; charset=utf-8", "\"bbbb\"", kScript, true},
}};

http::Response Get(const http::Router& router, const std::string& path, const std::string& if_none_match = "") {
  http::Request req;
  req.method = "GET";
  req.target = req.path = path;
  if (!if_none_match.empty()) req.headers.Add("If-None-Match", if_none_match);
  auto w = std::make_shared<CapturingWriter>();
  router.Dispatch(req, w);
  EXPECT_TRUE(w->response.has_value()) << path;
  return w->response.value_or(http::Response{});
}

http::Router MakeRouter() {
  http::Router router;
  AddConsoleRoutes(router, kAssets);
  return router;
}

TEST(ConsoleRoutesTest, ServesIndexAtRootWithNoCacheAndPolicy) {
  const http::Router router = MakeRouter();
  for (const char* path : {"/", "/index.html"}) {
    const http::Response r = Get(router, path);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "<h1>hi</h1>");
    EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
    ASSERT_NE(r.headers.Find("Cache-Control"), nullptr);
    EXPECT_EQ(*r.headers.Find("Cache-Control"), "no-cache");
    EXPECT_EQ(*r.headers.Find("ETag"), "\"aaaa\"");
    const std::string* csp = r.headers.Find("Content-Security-Policy");
    ASSERT_NE(csp, nullptr);
    EXPECT_NE(csp->find("default-src 'self'"), std::string::npos);
    EXPECT_EQ(csp->find("unsafe-inline"), std::string::npos);
    EXPECT_EQ(csp->find("http"), std::string::npos);
    EXPECT_EQ(*r.headers.Find("X-Content-Type-Options"), "nosniff");
  }
}

TEST(ConsoleRoutesTest, HashedAssetsAreImmutable) {
  const http::Response r = Get(MakeRouter(), "/assets/index-1234.js");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "x=1;");
  EXPECT_EQ(r.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(*r.headers.Find("Cache-Control"), "public, max-age=31536000, immutable");
}

TEST(ConsoleRoutesTest, MatchingIfNoneMatchAnswers304WithoutBody) {
  const http::Router router = MakeRouter();
  for (const char* inm : {"\"aaaa\"", "W/\"aaaa\"", "\"zzzz\", \"aaaa\"", "*"}) {
    const http::Response r = Get(router, "/", inm);
    EXPECT_EQ(r.status, 304) << inm;
    EXPECT_TRUE(r.body.empty()) << inm;
    EXPECT_EQ(*r.headers.Find("ETag"), "\"aaaa\"");
  }
  const http::Response other = Get(router, "/", "\"bbbb\"");
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.body, "<h1>hi</h1>");
}

TEST(ConsoleRoutesTest, OtherPathsKeepTheJson404) {
  const http::Router router = MakeRouter();
  for (const char* path : {"/v1/nothing", "/assets/missing.js", "/index.htm"}) {
    const http::Response r = Get(router, path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_NE(r.body.find("\"not_found\""), std::string::npos);
  }
}

TEST(ConsoleRoutesTest, EmbeddedSetHasAnIndexEitherWay) {
  // Built or not (web/dist absent: the "not built" page), / answers HTML.
  bool index = false;
  for (const ConsoleAsset& a : EmbeddedConsoleAssets()) {
    if (a.path == "/index.html") {
      index = true;
      EXPECT_EQ(a.content_type, "text/html; charset=utf-8");
      EXPECT_FALSE(a.immutable);
      const std::string body(reinterpret_cast<const char*>(a.data.data()), a.data.size());
      EXPECT_NE(body.find(ConsoleBuilt() ? "/assets/" : "npm run build"), std::string::npos);
    }
    EXPECT_EQ(a.etag.front(), '"');
    EXPECT_EQ(a.etag.back(), '"');
  }
  EXPECT_TRUE(index);
}

}  // namespace
}  // namespace pagoda::console
