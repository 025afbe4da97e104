#include "tenancy/records.h"

#include <algorithm>
#include <cmath>

namespace pagoda::tenancy {
namespace {

constexpr size_t kMaxNameBytes = 256;

bool IsSlugChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; }

Status ValidateSlug(std::string_view what, std::string_view id) {
  if (id.empty()) return InvalidArgument(std::string(what) + " is empty");
  if (id.size() > 64) return InvalidArgument(std::string(what) + " is longer than 64 bytes");
  if (!std::all_of(id.begin(), id.end(), IsSlugChar)) {
    return InvalidArgument(std::string(what) + " may use only a-z, 0-9, '_' and '-'");
  }
  return Status::Ok();
}

// Well-formed UTF-8 lead/continuation structure (PostgreSQL rejects the rest).
bool IsUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    if (c < 0x80) {
      n = 0;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if ((c >> 4) == 0xe) {
      n = 2;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
    } else {
      return false;
    }
    if (i + n >= s.size() && n > 0) return false;
    for (size_t k = 1; k <= n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n + 1;
  }
  return true;
}

bool IsClass(WorkloadClass c) { return static_cast<int>(c) < kWorkloadClassCount; }

}  // namespace

const char* PlanKindName(PlanKind plan) {
  switch (plan) {
    case PlanKind::kServerless: return "serverless";
    case PlanKind::kProvisioned: return "provisioned";
    case PlanKind::kDedicated: return "dedicated";
  }
  return "serverless";
}

Result<PlanKind> ParsePlanKind(std::string_view name) {
  for (PlanKind p : {PlanKind::kServerless, PlanKind::kProvisioned, PlanKind::kDedicated}) {
    if (name == PlanKindName(p)) return p;
  }
  return InvalidArgument("unknown plan (expected serverless, provisioned or dedicated)");
}

WorkloadClass PlanMaxClass(PlanKind plan) {
  return plan == PlanKind::kServerless ? WorkloadClass::kInteractive : WorkloadClass::kRealtime;
}

Result<WorkloadClass> ParseStoredClass(std::string_view name) {
  for (WorkloadClass c : {WorkloadClass::kBatch, WorkloadClass::kInteractive, WorkloadClass::kRealtime}) {
    if (name == WorkloadClassName(c)) return c;
  }
  return InvalidArgument("unknown workload class (expected batch, interactive or realtime)");
}

const char* LimitScopeName(LimitScope scope) { return scope == LimitScope::kTenant ? "tenant" : "key"; }

Result<LimitScope> ParseLimitScope(std::string_view name) {
  if (name == "tenant") return LimitScope::kTenant;
  if (name == "key") return LimitScope::kKey;
  return InvalidArgument("unknown limit scope (expected tenant or key)");
}

const char* UsageStatusName(UsageStatus status) {
  switch (status) {
    case UsageStatus::kOk: return "ok";
    case UsageStatus::kError: return "error";
    case UsageStatus::kCancelled: return "cancelled";
    case UsageStatus::kRateLimited: return "rate_limited";
    case UsageStatus::kUnauthorized: return "unauthorized";
    case UsageStatus::kBadRequest: return "bad_request";
    case UsageStatus::kTimeout: return "timeout";
    case UsageStatus::kUnavailable: return "unavailable";
  }
  return "error";
}

Result<UsageStatus> ParseUsageStatus(std::string_view name) {
  for (UsageStatus s : {UsageStatus::kOk, UsageStatus::kError, UsageStatus::kCancelled, UsageStatus::kRateLimited,
                        UsageStatus::kUnauthorized, UsageStatus::kBadRequest, UsageStatus::kTimeout,
                        UsageStatus::kUnavailable}) {
    if (name == UsageStatusName(s)) return s;
  }
  return InvalidArgument("unknown usage status");
}

bool ApiKey::AllowsModel(std::string_view model) const {
  return models.empty() || std::find(models.begin(), models.end(), model) != models.end();
}

Status ValidateTenantId(std::string_view id) { return ValidateSlug("tenant id", id); }

Status ValidateName(std::string_view what, std::string_view value) {
  if (value.size() > kMaxNameBytes) {
    return InvalidArgument(std::string(what) + " is longer than " + std::to_string(kMaxNameBytes) + " bytes");
  }
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) return InvalidArgument(std::string(what) + " contains a control byte");
  }
  if (!IsUtf8(value)) return InvalidArgument(std::string(what) + " is not valid UTF-8");
  return Status::Ok();
}

Status ValidateTenant(const Tenant& t) {
  PAGODA_RETURN_IF_ERROR(ValidateTenantId(t.id));
  PAGODA_RETURN_IF_ERROR(ValidateName("tenant name", t.name));
  if (!(t.weight > 0) || !std::isfinite(t.weight)) return InvalidArgument("tenant weight must be a finite number > 0");
  PAGODA_RETURN_IF_ERROR(ValidateName("dedicated deployment", t.dedicated_deployment));
  if (t.plan == PlanKind::kDedicated && t.dedicated_deployment.empty()) {
    return InvalidArgument("a dedicated tenant needs a dedicated_deployment");
  }
  if ((t.max_class && !IsClass(*t.max_class)) || !IsClass(t.default_class)) {
    return InvalidArgument("tenant max_class / default_class is not a workload class");
  }
  return Status::Ok();
}

Status ValidateApiKey(const ApiKey& k) {
  PAGODA_RETURN_IF_ERROR(ValidateSlug("key id", k.id));
  PAGODA_RETURN_IF_ERROR(ValidateTenantId(k.tenant_id));
  PAGODA_RETURN_IF_ERROR(ValidateName("key name", k.name));
  if (k.hash.size() != 64 || !std::all_of(k.hash.begin(), k.hash.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      })) {
    return InvalidArgument("key hash must be 64 lowercase hex digits");
  }
  if (k.models.size() > 1024) return InvalidArgument("key scope lists more than 1024 models");
  for (const std::string& m : k.models) {
    if (m.empty()) return InvalidArgument("key scope has an empty model name");
    PAGODA_RETURN_IF_ERROR(ValidateName("model name", m));
  }
  if (k.expires_at < 0 || k.revoked_at < 0) return InvalidArgument("key times must be >= 0");
  if (k.max_class && !IsClass(*k.max_class)) return InvalidArgument("key max_class is not a workload class");
  return Status::Ok();
}

Status ValidateLimitRule(const LimitRule& r) {
  if (r.scope == LimitScope::kTenant) {
    PAGODA_RETURN_IF_ERROR(ValidateTenantId(r.scope_id));
  } else {
    PAGODA_RETURN_IF_ERROR(ValidateSlug("key id", r.scope_id));
  }
  PAGODA_RETURN_IF_ERROR(ValidateName("model name", r.model));
  if (r.limits.rpm < 0 || r.limits.tpm < 0 || r.limits.concurrent < 0) {
    return InvalidArgument("limits must be >= 0 (0 = unlimited)");
  }
  return Status::Ok();
}

Status ValidateReservation(const Reservation& r) {
  PAGODA_RETURN_IF_ERROR(ValidateTenantId(r.tenant_id));
  if (r.model.empty()) return InvalidArgument("a reservation needs a model");
  PAGODA_RETURN_IF_ERROR(ValidateName("model name", r.model));
  if (!(r.tokens_per_second > 0) || !std::isfinite(r.tokens_per_second)) {
    return InvalidArgument("reserved tokens_per_second must be a finite number > 0");
  }
  return Status::Ok();
}

Status ValidatePrice(const Price& p) {
  if (p.model.empty()) return InvalidArgument("a price needs a model");
  PAGODA_RETURN_IF_ERROR(ValidateName("model name", p.model));
  for (double v : {p.input_per_mtok, p.cached_input_per_mtok, p.output_per_mtok, p.replica_hour}) {
    if (!(v >= 0) || !std::isfinite(v)) return InvalidArgument("prices must be finite numbers >= 0");
  }
  if (!(p.batch_factor > 0 && p.batch_factor <= 1)) return InvalidArgument("batch_factor must be in (0, 1]");
  return Status::Ok();
}

Status ValidateUsageRecord(const UsageRecord& r) {
  if (r.request_id.empty()) return InvalidArgument("usage record has no request id");
  for (const auto* s : {&r.request_id, &r.tenant_id, &r.key_id, &r.model, &r.deployment, &r.version}) {
    PAGODA_RETURN_IF_ERROR(ValidateName("usage record field", *s));
  }
  if (r.prompt_tokens < 0 || r.cached_tokens < 0 || r.completion_tokens < 0 || r.cached_tokens > r.prompt_tokens) {
    return InvalidArgument("usage record token counts must be >= 0 with cached <= prompt");
  }
  if (!IsClass(r.service_tier)) return InvalidArgument("usage record service_tier is not a workload class");
  return Status::Ok();
}

}  // namespace pagoda::tenancy
