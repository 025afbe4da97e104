// The control plane's admin API: tenants, API keys, limits, reservations,
// prices, usage reports and per-tenant SLA figures, as JSON routes under
// /admin/ on an http::Router. Shared by `pagoda serve` and `pagoda gateway`;
// `pagoda admin` (apps/pagoda/cmd_admin.cc) is its client. Reference:
// docs/CONTROL_PLANE.md, "Admin API and CLI".
//
//   POST   /admin/tenants                 GET /admin/tenants
//   GET    /admin/tenants/{id}            PATCH /admin/tenants/{id}
//   POST   /admin/keys                    GET /admin/keys[?tenant=ID]
//   GET    /admin/keys/{id}               POST /admin/keys/{id}/revoke
//   POST   /admin/keys/{id}/rotate
//   PUT    /admin/limits                  GET /admin/limits[?tenant=ID]    DELETE /admin/limits?scope=&id=&model=
//   PUT    /admin/reservations            GET /admin/reservations          DELETE /admin/reservations?tenant=&model=
//   PUT    /admin/prices                  GET /admin/prices                DELETE /admin/prices?model=
//   GET    /admin/usage?group_by=&from=&to=&tenant=&key=&model=&format=json|csv
//          (group_by: any of tenant,key,model,day,service_tier, or none)
//   GET    /admin/sla                     (when options.sla is given)
//
// Authentication is the caller's: install the admin-key guard on "/admin/"
// (Router::AddGuard) before serving; these routes add none.
//
// Errors are OpenAI-style ({"error": {"message", "type", "param", "code"}}):
// 400 malformed or invalid input (naming the field), 404 unknown tenant / key
// / entry, 409 conflicts (existing tenant id, rotating a revoked key), 503
// when the store is unusable, 500 otherwise; messages name the operation,
// never a secret. Zero retention: key hashes never leave the store and a
// key's secret appears once, in the create or rotate response.
//
// Threads: store calls block, so handlers never run them on the server's I/O
// threads: requests are queued to one admin thread owned by the routes
// (destroyed with the router). `store` and `options.sla` must outlive the
// router (and the server it is moved into).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "control/tenant_sla.h"
#include "http/router.h"
#include "tenancy/tenant_store.h"

namespace pagoda::control {

struct AdminRouteOptions {
  // HMAC pepper for the keys' hashes: the one the TenantCache uses.
  std::string pepper;
  // Unix milliseconds; empty = the system clock (tests pass their own).
  std::function<int64_t()> now_ms;
  // Serves GET /admin/sla when set.
  const TenantSla* sla = nullptr;
  // Requests waiting for the admin thread before new ones get 503.
  size_t max_queued = 256;
};

void AddControlAdminRoutes(http::Router& router, tenancy::TenantStore& store, AdminRouteOptions options);

}  // namespace pagoda::control
