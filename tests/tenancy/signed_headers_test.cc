// Signed tenant headers: round trip, every field tampered, wrong secret,
// clock skew both ways, replays, fields the canonical string cannot carry,
// workload classes (tampered or unknown).
#include "tenancy/signed_headers.h"

#include "tenancy/api_key.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <thread>

namespace pagoda::tenancy {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::system_clock;

constexpr std::string_view kSecret = "0123456789abcdef0123456789abcdef";
const Clock::time_point kNow = Clock::time_point(seconds(1'760'000'000));

TenantContext Ctx() {
  TenantContext c;
  c.tenant = "t_acme";
  c.key_id = "key_42";
  c.plan = "provisioned";
  c.weight = 2.5;
  c.priority = 1;
  c.cache_scope = "t_acme/key_42";
  c.workload_class = WorkloadClass::kRealtime;
  return c;
}

HeaderLookup Lookup(const HeaderList& h) {
  return [&h](std::string_view name) -> const std::string* {
    for (const auto& [n, v] : h) {
      if (n == name) return &v;
    }
    return nullptr;
  };
}

HeaderList Signed(const TenantContext& c = Ctx(), std::string_view id = "req-1", Clock::time_point now = kNow) {
  auto h = SignTenantHeaders(c, id, kSecret, now);
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return h.ok() ? *h : HeaderList{};
}

void SetHeader(HeaderList& h, std::string_view name, std::string value) {
  for (auto& [n, v] : h) {
    if (n == name) v = std::move(value);
  }
}

TEST(SignedHeadersTest, RoundTripsEveryField) {
  const HeaderList h = Signed();
  ASSERT_EQ(h.size(), 10u);
  EXPECT_EQ(h[0].first, "x-request-id");
  EXPECT_EQ(h[0].second, "req-1");
  EXPECT_EQ(*Lookup(h)("x-pagoda-class"), "realtime");
  EXPECT_EQ(*Lookup(h)("x-pagoda-timestamp"), "1760000000");
  EXPECT_EQ(Lookup(h)("x-pagoda-signature")->size(), 64u);
  VerifyResult r = VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr);
  ASSERT_TRUE(r.ok()) << VerifyOutcomeName(r.outcome);
  EXPECT_EQ(r.context, Ctx());
}

TEST(SignedHeadersTest, SignatureMatchesTheDocumentedCanonicalString) {
  // docs/CONTROL_PLANE_SIGNING.md:
  // HMAC-SHA256(secret, "pagoda-tenant-v2\nreq-1\nt\n\nserverless\n1\n0\n\ninteractive\n1760000000"),
  // computed independently with `printf ... | openssl dgst -sha256 -hmac 0123456789abcdef0123456789abcdef`.
  TenantContext c;
  c.tenant = "t";
  c.plan = "serverless";
  const HeaderList h = Signed(c);
  EXPECT_EQ(*Lookup(h)("x-pagoda-weight"), "1");
  EXPECT_EQ(*Lookup(h)("x-pagoda-priority"), "0");
  EXPECT_EQ(*Lookup(h)("x-pagoda-class"), "interactive");
  EXPECT_EQ(*Lookup(h)("x-pagoda-signature"), "2866676ae9fd772dbda8569c97966ce39f91903887774244d6213b94210d3d41");
  c.workload_class = WorkloadClass::kBatch;
  EXPECT_EQ(*Lookup(Signed(c))("x-pagoda-signature"),
            "e81cc9c8029ba21f7bafcdb7465354332f536f89d7027336ffcf94c29b695d60");
}

TEST(SignedHeadersTest, RejectsEachTamperedField) {
  const std::vector<std::pair<std::string, std::string>> tampered = {
      {"x-request-id", "req-2"},          {"x-pagoda-tenant", "t_other"},   {"x-pagoda-key-id", "key_43"},
      {"x-pagoda-plan", "dedicated"},     {"x-pagoda-weight", "25"},        {"x-pagoda-priority", "9"},
      {"x-pagoda-cache-scope", "t_other"}, {"x-pagoda-class", "batch"},     {"x-pagoda-timestamp", "1760000001"}};
  for (const auto& [name, value] : tampered) {
    HeaderList h = Signed();
    SetHeader(h, name, value);
    EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr).outcome, VerifyOutcome::kBadSignature) << name;
  }
  // A flipped signature digit, and the same digest spelled in upper case.
  HeaderList h = Signed();
  std::string sig = *Lookup(h)("x-pagoda-signature");
  std::string flipped = sig;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  SetHeader(h, "x-pagoda-signature", flipped);
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr).outcome, VerifyOutcome::kBadSignature);
  std::string upper = sig;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper != sig) {
    SetHeader(h, "x-pagoda-signature", upper);
    EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr).outcome, VerifyOutcome::kMalformed);
  }
}

TEST(SignedHeadersTest, RejectsAnotherSecret) {
  const HeaderList h = Signed();
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), "0123456789abcdef0123456789abcdeF", kNow, nullptr).outcome,
            VerifyOutcome::kBadSignature);
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), "short", kNow, nullptr).outcome, VerifyOutcome::kMalformed);
  EXPECT_FALSE(SignTenantHeaders(Ctx(), "req-1", "short", kNow).ok());
}

TEST(SignedHeadersTest, AcceptsSkewUpToThirtySecondsEitherWay) {
  const HeaderList h = Signed();
  EXPECT_TRUE(VerifyTenantHeaders(Lookup(h), kSecret, kNow + seconds(30), nullptr).ok());
  EXPECT_TRUE(VerifyTenantHeaders(Lookup(h), kSecret, kNow - seconds(30), nullptr).ok());
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow + seconds(31), nullptr).outcome, VerifyOutcome::kStale);
  // Signed in the future (a gateway clock ahead of ours).
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow - seconds(31), nullptr).outcome, VerifyOutcome::kStale);
}

TEST(SignedHeadersTest, RejectsAReplayInsideTheWindow) {
  ReplayCache replay;
  const HeaderList h = Signed();
  EXPECT_TRUE(VerifyTenantHeaders(Lookup(h), kSecret, kNow, &replay).ok());
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow + seconds(5), &replay).outcome, VerifyOutcome::kReplayed);
  // Past the window it is stale, and the cache has let the entry go.
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow + seconds(31), &replay).outcome, VerifyOutcome::kStale);
  // The same request id signed again (a gateway retry) is a new header set.
  EXPECT_TRUE(VerifyTenantHeaders(Lookup(Signed(Ctx(), "req-1", kNow + seconds(1))), kSecret, kNow + seconds(1),
                                  &replay)
                  .ok());
  // Forgeries never reach the cache.
  HeaderList forged = Signed(Ctx(), "req-9");
  SetHeader(forged, "x-pagoda-tenant", "t_other");
  const size_t before = replay.size();
  EXPECT_EQ(VerifyTenantHeaders(Lookup(forged), kSecret, kNow, &replay).outcome, VerifyOutcome::kBadSignature);
  EXPECT_EQ(replay.size(), before);
}

TEST(SignedHeadersTest, ReplayCacheIsBoundedAndExpires) {
  ReplayCache cache(3);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(cache.Insert(std::to_string(i) + "k", kNow + seconds(10), kNow));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.Insert("4k", kNow + seconds(10), kNow));
  EXPECT_TRUE(cache.Insert("0k", kNow + seconds(10), kNow));  // the oldest was forgotten
  EXPECT_TRUE(cache.Insert("x", kNow + seconds(30), kNow + seconds(11)));
  EXPECT_EQ(cache.size(), 1u);  // the others expired
}

TEST(SignedHeadersTest, ReplayCacheAcceptsEachKeyOnceAcrossThreads) {
  ReplayCache cache;
  const HeaderList h = Signed();
  std::atomic<int> accepted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) accepted += VerifyTenantHeaders(Lookup(h), kSecret, kNow, &cache).ok();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(accepted.load(), 1);
}

TEST(SignedHeadersTest, AbsentMissingAndMalformedHeaders) {
  const HeaderList none = {{"x-request-id", "req-1"}, {"content-type", "application/json"}};
  EXPECT_EQ(VerifyTenantHeaders(Lookup(none), kSecret, kNow, nullptr).outcome, VerifyOutcome::kAbsent);
  // Unsigned: the fields without a signature.
  HeaderList unsigned_h = Signed();
  unsigned_h.pop_back();
  EXPECT_EQ(VerifyTenantHeaders(Lookup(unsigned_h), kSecret, kNow, nullptr).outcome, VerifyOutcome::kMalformed);
  for (const char* name : {"x-request-id", "x-pagoda-tenant", "x-pagoda-plan", "x-pagoda-weight", "x-pagoda-priority",
                           "x-pagoda-class", "x-pagoda-timestamp"}) {
    HeaderList h = Signed();
    h.erase(std::find_if(h.begin(), h.end(), [&](const auto& p) { return p.first == name; }));
    EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr).outcome, VerifyOutcome::kMalformed) << name;
  }
  HeaderList h = Signed();
  SetHeader(h, "x-pagoda-signature", "not-hex");
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr).outcome, VerifyOutcome::kMalformed);
}

TEST(SignedHeadersTest, OptionalFieldsMayBeEmpty) {
  TenantContext c = Ctx();
  c.key_id.clear();
  c.cache_scope.clear();
  const HeaderList h = Signed(c);
  VerifyResult r = VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.context, c);
}

TEST(SignedHeadersTest, RefusesFieldsTheCanonicalStringCannotCarry) {
  for (const std::string& bad : {std::string("a\nb"), std::string("a\rb"), std::string("a\0b", 3),
                                 std::string(" lead"), std::string("trail "), std::string("caf\xc3\xa9"),
                                 std::string(300, 'x')}) {
    TenantContext c = Ctx();
    c.tenant = bad;
    EXPECT_FALSE(SignTenantHeaders(c, "req-1", kSecret, kNow).ok());
    c = Ctx();
    c.cache_scope = bad;
    EXPECT_FALSE(SignTenantHeaders(c, "req-1", kSecret, kNow).ok());
    c = Ctx();
    c.key_id = bad;
    EXPECT_FALSE(SignTenantHeaders(c, "req-1", kSecret, kNow).ok());
    EXPECT_FALSE(SignTenantHeaders(Ctx(), bad, kSecret, kNow).ok());
  }
  // A newline smuggled into a received header (a field boundary moved) is refused before any MAC.
  HeaderList h = Signed();
  SetHeader(h, "x-pagoda-tenant", "t_acme\nkey_42");
  SetHeader(h, "x-pagoda-key-id", "");
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr).outcome, VerifyOutcome::kMalformed);
}

TEST(SignedHeadersTest, RefusesBadPlanWeightAndTenant) {
  TenantContext c = Ctx();
  c.plan = "gold";
  EXPECT_FALSE(SignTenantHeaders(c, "req-1", kSecret, kNow).ok());
  for (double w : {0.0, -1.0, 2e6, std::nan("")}) {
    c = Ctx();
    c.weight = w;
    EXPECT_FALSE(SignTenantHeaders(c, "req-1", kSecret, kNow).ok()) << w;
  }
  c = Ctx();
  c.tenant.clear();
  EXPECT_FALSE(SignTenantHeaders(c, "req-1", kSecret, kNow).ok());
  EXPECT_FALSE(SignTenantHeaders(Ctx(), "", kSecret, kNow).ok());
}

// The signature the gateway would compute over the received values.
std::string Resign(const HeaderList& h) {
  auto v = [&](const char* n) { return *Lookup(h)(n); };
  const std::string canonical = "pagoda-tenant-v2\n" + v("x-request-id") + "\n" + v("x-pagoda-tenant") + "\n" +
                                v("x-pagoda-key-id") + "\n" + v("x-pagoda-plan") + "\n" + v("x-pagoda-weight") +
                                "\n" + v("x-pagoda-priority") + "\n" + v("x-pagoda-cache-scope") + "\n" +
                                v("x-pagoda-class") + "\n" + v("x-pagoda-timestamp");
  unsigned char mac[32];
  unsigned int n = 0;
  HMAC(EVP_sha256(), kSecret.data(), static_cast<int>(kSecret.size()),
       reinterpret_cast<const unsigned char*>(canonical.data()), canonical.size(), mac, &n);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < n; ++i) {
    hex += kDigits[mac[i] >> 4];
    hex += kDigits[mac[i] & 15];
  }
  return hex;
}

TEST(SignedHeadersTest, CarriesEachWorkloadClassAndRejectsATamperedOrUnknownOne) {
  for (WorkloadClass wc : {WorkloadClass::kBatch, WorkloadClass::kInteractive, WorkloadClass::kRealtime}) {
    TenantContext c = Ctx();
    c.workload_class = wc;
    const HeaderList h = Signed(c);
    EXPECT_EQ(*Lookup(h)("x-pagoda-class"), WorkloadClassName(wc));
    VerifyResult r = VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr);
    ASSERT_TRUE(r.ok()) << VerifyOutcomeName(r.outcome);
    EXPECT_EQ(r.context.workload_class, wc);
  }
  // A client (or a proxy) raising batch to realtime breaks the signature.
  TenantContext batch = Ctx();
  batch.workload_class = WorkloadClass::kBatch;
  HeaderList h = Signed(batch);
  SetHeader(h, "x-pagoda-class", "realtime");
  EXPECT_EQ(VerifyTenantHeaders(Lookup(h), kSecret, kNow, nullptr).outcome, VerifyOutcome::kBadSignature);
  // Validly signed but not one of our names (OpenAI's aliases included): malformed.
  for (const char* unknown : {"gold", "flex", "priority", "Realtime", ""}) {
    HeaderList u = Signed();
    SetHeader(u, "x-pagoda-class", unknown);
    SetHeader(u, "x-pagoda-signature", Resign(u));
    EXPECT_EQ(VerifyTenantHeaders(Lookup(u), kSecret, kNow, nullptr).outcome, VerifyOutcome::kMalformed) << unknown;
  }
  // The control: re-signing a known name verifies.
  HeaderList k = Signed();
  SetHeader(k, "x-pagoda-class", "batch");
  SetHeader(k, "x-pagoda-signature", Resign(k));
  VerifyResult r = VerifyTenantHeaders(Lookup(k), kSecret, kNow, nullptr);
  ASSERT_TRUE(r.ok()) << VerifyOutcomeName(r.outcome);
  EXPECT_EQ(r.context.workload_class, WorkloadClass::kBatch);
  // The signer refuses a value outside the enum.
  TenantContext bad = Ctx();
  bad.workload_class = static_cast<WorkloadClass>(7);
  EXPECT_EQ(SignTenantHeaders(bad, "req-1", kSecret, kNow).status().code(), StatusCode::kInvalidArgument);
}

// The signature comparison (api_key.h's constant-time HashesEqual).
TEST(SignedHeadersTest, SignatureComparisonComparesBytes) {
  EXPECT_TRUE(HashesEqual("", ""));
  EXPECT_TRUE(HashesEqual("abc", "abc"));
  EXPECT_FALSE(HashesEqual("abc", "abd"));
  EXPECT_FALSE(HashesEqual("abc", "ab"));
  EXPECT_FALSE(HashesEqual(std::string_view("a\0c", 3), std::string_view("a\0d", 3)));
}

}  // namespace
}  // namespace pagoda::tenancy
