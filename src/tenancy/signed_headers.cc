#include "tenancy/signed_headers.h"

#include "tenancy/api_key.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace pagoda::tenancy {
namespace {

// v2: the workload class joined the signed fields (v1 had none).
constexpr std::string_view kCanonicalPrefix = "pagoda-tenant-v2";
constexpr double kMaxWeight = 1e6;
constexpr size_t kMacBytes = 32;  // SHA-256

// Printable ASCII without leading or trailing space: what an HTTP header
// value carries unchanged (parsers strip surrounding whitespace) and what
// cannot break the newline-separated canonical string.
bool Carriable(std::string_view v, size_t max_bytes) {
  if (v.size() > max_bytes) return false;
  for (char c : v) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return v.empty() || (v.front() != ' ' && v.back() != ' ');
}

std::string FormatWeight(double w) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), w);
  return std::string(buf, r.ptr);
}

bool ParseWeight(std::string_view s, double* out) {
  if (s.empty()) return false;
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  if (!std::isfinite(v) || v <= 0 || v > kMaxWeight) return false;
  *out = v;
  return true;
}

template <typename Int>
bool ParseInt(std::string_view s, Int* out) {
  if (s.empty() || s.size() > 20) return false;
  Int v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  *out = v;
  return true;
}

// The names the signer writes, and only those (no service_tier aliases).
bool ParseClass(std::string_view s, WorkloadClass* out) {
  for (WorkloadClass c : {WorkloadClass::kBatch, WorkloadClass::kInteractive, WorkloadClass::kRealtime}) {
    if (s == WorkloadClassName(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

bool IsClass(WorkloadClass c) { return static_cast<int>(c) < kWorkloadClassCount; }

// docs/CONTROL_PLANE_SIGNING.md: the prefix, then each value, '\n' between.
std::string Canonical(std::string_view request_id, std::string_view tenant, std::string_view key_id,
                      std::string_view plan, std::string_view weight, std::string_view priority,
                      std::string_view cache_scope, std::string_view workload_class, std::string_view timestamp) {
  std::string s;
  s.reserve(kCanonicalPrefix.size() + request_id.size() + tenant.size() + key_id.size() + plan.size() +
            weight.size() + priority.size() + cache_scope.size() + workload_class.size() + timestamp.size() + 9);
  for (std::string_view part :
       {kCanonicalPrefix, request_id, tenant, key_id, plan, weight, priority, cache_scope, workload_class}) {
    s.append(part);
    s.push_back('\n');
  }
  s.append(timestamp);
  return s;
}

bool Mac(std::string_view secret, std::string_view message, unsigned char out[kMacBytes]) {
  unsigned int n = 0;
  const unsigned char* r = HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                                reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &n);
  return r != nullptr && n == kMacBytes;
}

std::string Hex(const unsigned char* b, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[b[i] >> 4];
    s[2 * i + 1] = kDigits[b[i] & 15];
  }
  return s;
}

// Lower-case hex only: one spelling per signature, so the replay key is unique.
bool Unhex(std::string_view s, unsigned char out[kMacBytes]) {
  if (s.size() != 2 * kMacBytes) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < kMacBytes; ++i) {
    const int hi = nibble(s[2 * i]);
    const int lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

bool IsKnownPlan(std::string_view plan) {
  return plan == "serverless" || plan == "provisioned" || plan == "dedicated";
}

const char* VerifyOutcomeName(VerifyOutcome o) {
  switch (o) {
    case VerifyOutcome::kValid: return "valid";
    case VerifyOutcome::kAbsent: return "absent";
    case VerifyOutcome::kMalformed: return "malformed";
    case VerifyOutcome::kBadSignature: return "bad signature";
    case VerifyOutcome::kStale: return "stale timestamp";
    case VerifyOutcome::kReplayed: return "replayed";
  }
  return "?";
}

Result<HeaderList> SignTenantHeaders(const TenantContext& ctx, std::string_view request_id, std::string_view secret,
                                     std::chrono::system_clock::time_point now) {
  if (secret.size() < kMinSecretBytes) {
    return InvalidArgument("the tenant header secret must be at least " + std::to_string(kMinSecretBytes) + " bytes");
  }
  if (request_id.empty() || !Carriable(request_id, kMaxRequestIdBytes)) {
    return InvalidArgument("the request id must be 1 to " + std::to_string(kMaxRequestIdBytes) +
                           " printable ASCII bytes without surrounding spaces");
  }
  if (ctx.tenant.empty()) return InvalidArgument("the tenant is empty");
  for (const auto& [name, value] : {std::pair<const char*, const std::string*>{"tenant", &ctx.tenant},
                                    {"key id", &ctx.key_id},
                                    {"cache scope", &ctx.cache_scope}}) {
    if (!Carriable(*value, kMaxFieldBytes)) {
      return InvalidArgument(std::string("the ") + name + " must be at most " + std::to_string(kMaxFieldBytes) +
                             " printable ASCII bytes (no control characters or newlines) without surrounding spaces");
    }
  }
  if (!IsKnownPlan(ctx.plan)) return InvalidArgument("unknown plan (expected serverless, provisioned or dedicated)");
  if (!IsClass(ctx.workload_class)) return InvalidArgument("unknown workload class");
  const std::string workload_class = WorkloadClassName(ctx.workload_class);
  if (!std::isfinite(ctx.weight) || ctx.weight <= 0 || ctx.weight > kMaxWeight) {
    return InvalidArgument("the weight must be finite, positive and at most 1e6");
  }
  const std::string weight = FormatWeight(ctx.weight);
  const std::string priority = std::to_string(ctx.priority);
  const std::string timestamp = std::to_string(UnixSeconds(now));
  unsigned char mac[kMacBytes];
  if (!Mac(secret,
           Canonical(request_id, ctx.tenant, ctx.key_id, ctx.plan, weight, priority, ctx.cache_scope, workload_class,
                     timestamp),
           mac)) {
    return Internal("HMAC-SHA256 failed");
  }
  HeaderList h;
  h.reserve(10);
  h.emplace_back(kHeaderRequestId, std::string(request_id));
  h.emplace_back(kHeaderTenant, ctx.tenant);
  h.emplace_back(kHeaderKeyId, ctx.key_id);
  h.emplace_back(kHeaderPlan, ctx.plan);
  h.emplace_back(kHeaderWeight, weight);
  h.emplace_back(kHeaderPriority, priority);
  h.emplace_back(kHeaderCacheScope, ctx.cache_scope);
  h.emplace_back(kHeaderClass, workload_class);
  h.emplace_back(kHeaderTimestamp, timestamp);
  h.emplace_back(kHeaderSignature, Hex(mac, kMacBytes));
  return h;
}

VerifyResult VerifyTenantHeaders(const HeaderLookup& headers, std::string_view secret,
                                 std::chrono::system_clock::time_point now, ReplayCache* replay) {
  VerifyResult out;
  static constexpr const char* kTenantHeaders[] = {kHeaderTenant,    kHeaderKeyId,      kHeaderPlan,
                                                   kHeaderWeight,    kHeaderPriority,   kHeaderCacheScope,
                                                   kHeaderClass,     kHeaderTimestamp,  kHeaderSignature};
  bool any = false;
  for (const char* name : kTenantHeaders) any = any || headers(name) != nullptr;
  if (!any) return out;  // kAbsent
  out.outcome = VerifyOutcome::kMalformed;
  if (secret.size() < kMinSecretBytes) return out;
  static const std::string kEmpty;
  auto get = [&](const char* name) { return headers(name); };
  auto optional = [&](const char* name) {
    const std::string* v = headers(name);
    return v != nullptr ? v : &kEmpty;
  };
  const std::string* request_id = get(kHeaderRequestId);
  const std::string* tenant = get(kHeaderTenant);
  const std::string* key_id = optional(kHeaderKeyId);
  const std::string* plan = get(kHeaderPlan);
  const std::string* weight = get(kHeaderWeight);
  const std::string* priority = get(kHeaderPriority);
  const std::string* cache_scope = optional(kHeaderCacheScope);
  const std::string* workload_class = get(kHeaderClass);
  const std::string* timestamp = get(kHeaderTimestamp);
  const std::string* signature = get(kHeaderSignature);
  if (!request_id || !tenant || !plan || !weight || !priority || !workload_class || !timestamp || !signature) {
    return out;
  }
  if (request_id->empty() || !Carriable(*request_id, kMaxRequestIdBytes) || tenant->empty()) return out;
  for (const std::string* v : {tenant, key_id, plan, weight, priority, cache_scope, workload_class, timestamp}) {
    if (!Carriable(*v, kMaxFieldBytes)) return out;
  }
  unsigned char got[kMacBytes];
  if (!Unhex(*signature, got)) return out;
  unsigned char want[kMacBytes];
  if (!Mac(secret,
           Canonical(*request_id, *tenant, *key_id, *plan, *weight, *priority, *cache_scope, *workload_class,
                     *timestamp),
           want)) {
    return out;
  }
  if (!HashesEqual(std::string_view(reinterpret_cast<const char*>(got), kMacBytes),
                          std::string_view(reinterpret_cast<const char*>(want), kMacBytes))) {
    out.outcome = VerifyOutcome::kBadSignature;
    return out;
  }
  // Signed by the gateway from here on; still check what it signed.
  int64_t ts = 0;
  TenantContext ctx;
  if (!ParseInt(*timestamp, &ts) || !IsKnownPlan(*plan) || !ParseWeight(*weight, &ctx.weight) ||
      !ParseInt(*priority, &ctx.priority) || !ParseClass(*workload_class, &ctx.workload_class)) {
    return out;
  }
  const int64_t now_s = UnixSeconds(now);
  const int64_t skew = kMaxClockSkew.count();
  if (ts < now_s - skew || ts > now_s + skew) {
    out.outcome = VerifyOutcome::kStale;
    return out;
  }
  if (replay != nullptr) {
    const auto expiry = std::chrono::system_clock::time_point(std::chrono::seconds(ts + skew + 1));
    if (!replay->Insert(*request_id + '\n' + *signature, expiry, now)) {
      out.outcome = VerifyOutcome::kReplayed;
      return out;
    }
  }
  ctx.tenant = *tenant;
  ctx.key_id = *key_id;
  ctx.plan = *plan;
  ctx.cache_scope = *cache_scope;
  out.context = std::move(ctx);
  out.outcome = VerifyOutcome::kValid;
  return out;
}

ReplayCache::ReplayCache(size_t capacity) : capacity_(capacity > 0 ? capacity : 1) {}

bool ReplayCache::Insert(std::string key, std::chrono::system_clock::time_point expiry,
                         std::chrono::system_clock::time_point now) {
  std::lock_guard lock(mu_);
  // Insertion order is close to expiry order (timestamps within the skew),
  // so dropping expired entries from the front is enough to stay bounded.
  while (!order_.empty() && order_.front().first <= now) {
    keys_.erase(order_.front().second);
    order_.pop_front();
  }
  if (keys_.count(key) != 0) return false;
  if (keys_.size() >= capacity_) {
    keys_.erase(order_.front().second);
    order_.pop_front();
  }
  keys_.insert(key);
  order_.emplace_back(expiry, std::move(key));
  return true;
}

size_t ReplayCache::size() const {
  std::lock_guard lock(mu_);
  return keys_.size();
}

}  // namespace pagoda::tenancy
