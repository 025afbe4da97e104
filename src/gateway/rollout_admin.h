// RolloutAdmin: the rollout endpoints of the admin API (JSON; the /admin/
// guard of AddAdminRoutes puts them behind the admin key):
//   POST /admin/rollouts               {model, version, steps?, step_interval_ms?,
//                                       max_error_rate?, ...} -> 201 + status;
//                                       400 bad body, 404 unknown model/version,
//                                       409 one already running / already current
//   GET  /admin/rollouts               {"rollouts": [status...]}
//   GET  /admin/rollouts/MODEL         status of the running or last rollout; 404 none
//   POST /admin/rollouts/MODEL/abort   atomic rollback to the old version -> status;
//                                       404 none, 409 already ended
// Errors are OpenAI-style error objects.
#pragma once

#include "gateway/rollout_controller.h"
#include "http/router.h"

namespace pagoda::gateway {

// `rollouts` must outlive the router.
void AddRolloutRoutes(http::Router& router, RolloutController* rollouts);

}  // namespace pagoda::gateway
