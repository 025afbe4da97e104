// Which models a tenant sees and where its requests may go: a model whose
// config names a `tenant` is that tenant's dedicated deployment, invisible
// to every other tenant (404, and absent from /v1/models); a tenant on the
// dedicated plan is routed only to its own deployment (a request for the
// model it serves goes there; any other model is refused). Keys scoped to
// models see only those. Pure functions over the routing table; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "control/control_plane.h"
#include "gateway/routing_table.h"

namespace pagoda::gateway {

// The model entry a name (model, "model@version" or alias) resolves to, or nullptr.
const ModelRoute* ResolveModel(const RoutingTable& table, std::string_view name);

// Whether /v1/models lists `name` to `caller`.
bool VisibleTo(const RoutingTable& table, std::string_view name, const control::Caller& caller);

// The model name to route `requested` by for `caller` (`requested` itself,
// or the caller's dedicated deployment), or the error to answer.
api::ApiResult<std::string> TenantRoute(const RoutingTable& table, std::string_view requested,
                                        const control::Caller& caller);

}  // namespace pagoda::gateway
