// Signed tenant headers: how the gateway tells a replica which tenant, plan,
// priority and workload class a request belongs to, so that the replica schedules it fairly
// and isolates its prefix cache, without trusting anything the client sent.
// The gateway signs the fields with a secret it shares with its replicas
// (HMAC-SHA256 over the request id, the fields and a timestamp); a replica
// takes them only when the signature verifies, the timestamp is within
// kMaxClockSkew of its clock and the (request id, signature) pair was not
// seen before. The canonical string is specified byte by byte in
// docs/CONTROL_PLANE_SIGNING.md.
//
// Headers are plain name/value pairs (no dependency on src/http). Sign and
// Verify are pure apart from the ReplayCache, which is thread-safe. Header
// values, the secret and the signature never appear in an error message.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/workload_class.h"

namespace pagoda::tenancy {

inline constexpr const char* kHeaderRequestId = "x-request-id";
inline constexpr const char* kHeaderTenant = "x-pagoda-tenant";
inline constexpr const char* kHeaderKeyId = "x-pagoda-key-id";
inline constexpr const char* kHeaderPlan = "x-pagoda-plan";
inline constexpr const char* kHeaderWeight = "x-pagoda-weight";
inline constexpr const char* kHeaderPriority = "x-pagoda-priority";
inline constexpr const char* kHeaderCacheScope = "x-pagoda-cache-scope";
inline constexpr const char* kHeaderClass = "x-pagoda-class";
inline constexpr const char* kHeaderTimestamp = "x-pagoda-timestamp";
inline constexpr const char* kHeaderSignature = "x-pagoda-signature";

// A signed timestamp further than this from the verifier's clock (either
// way) is stale; a replayed header set is remembered this long.
inline constexpr std::chrono::seconds kMaxClockSkew{30};
// Bounds of the fields (bytes).
inline constexpr size_t kMaxRequestIdBytes = 128;
inline constexpr size_t kMaxFieldBytes = 256;
// The shortest secret Sign and Verify accept.
inline constexpr size_t kMinSecretBytes = 16;

// What the gateway decided about a request.
struct TenantContext {
  std::string tenant;       // non-empty
  std::string key_id;       // the API key's public id; may be empty
  std::string plan;         // "serverless" | "provisioned" | "dedicated"
  double weight = 1;        // fair-share weight, finite, in (0, 1e6]
  int32_t priority = 0;     // admission band, higher first (provisioned > serverless)
  std::string cache_scope;  // prefix-cache salt (e.g. the tenant, or tenant + key); may be empty
  // The class the gateway resolved for the request (control::ResolveClass);
  // sent by its name: "batch" | "interactive" | "realtime".
  WorkloadClass workload_class = WorkloadClass::kInteractive;
  bool operator==(const TenantContext&) const = default;
};

bool IsKnownPlan(std::string_view plan);

using HeaderList = std::vector<std::pair<std::string, std::string>>;
// The value of a header by its lower-case name, or nullptr (the caller
// compares names case-insensitively, as HTTP does).
using HeaderLookup = std::function<const std::string*(std::string_view name)>;

// The headers for `ctx`: x-request-id (the caller must not send another),
// the seven x-pagoda-* fields, x-pagoda-timestamp (whole seconds of `now`)
// and x-pagoda-signature (64 lower-case hex digits). InvalidArgument for a
// field the canonical string cannot carry (a control or non-ASCII byte,
// leading or trailing space, too long), an unknown plan or workload class, a
// bad weight, an empty tenant or request id, or a secret shorter than
// kMinSecretBytes.
Result<HeaderList> SignTenantHeaders(const TenantContext& ctx, std::string_view request_id, std::string_view secret,
                                     std::chrono::system_clock::time_point now);

// Remembers the (request id, signature) pairs of accepted header sets until
// their timestamp goes stale, so each signed set is accepted once. Bounded:
// past `capacity` live entries the oldest is forgotten (a replay of it then
// needs more than `capacity` signed requests within 2 x kMaxClockSkew).
// Thread-safe.
class ReplayCache {
 public:
  static constexpr size_t kDefaultCapacity = 262144;
  explicit ReplayCache(size_t capacity = kDefaultCapacity);
  // False when `key` is already present (a replay); otherwise remembers it
  // until `expiry`. Entries past `now` are dropped first.
  bool Insert(std::string key, std::chrono::system_clock::time_point expiry, std::chrono::system_clock::time_point now);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  size_t capacity_;
  std::unordered_set<std::string> keys_;
  std::deque<std::pair<std::chrono::system_clock::time_point, std::string>> order_;  // insertion order
};

enum class VerifyOutcome : uint8_t {
  kValid,
  kAbsent,        // no x-pagoda-* header at all (a direct client)
  kMalformed,     // a field or the signature missing, unparsable or out of bounds (an unknown class too)
  kBadSignature,  // the signature does not match (forged, tampered, other secret)
  kStale,         // the timestamp is more than kMaxClockSkew from now
  kReplayed,      // this header set was already accepted
};
const char* VerifyOutcomeName(VerifyOutcome o);

struct VerifyResult {
  VerifyOutcome outcome = VerifyOutcome::kAbsent;
  TenantContext context;  // set when outcome == kValid
  bool ok() const { return outcome == VerifyOutcome::kValid; }
};

// Checks the headers Sign produced. The signature is compared in constant
// time, and only a header set whose signature and timestamp check out
// reaches `replay` (so forgeries cannot fill it). `replay` may be null
// (no replay protection: tests, tools).
VerifyResult VerifyTenantHeaders(const HeaderLookup& headers, std::string_view secret,
                                 std::chrono::system_clock::time_point now, ReplayCache* replay);


}  // namespace pagoda::tenancy
