// How `pagoda serve` and `pagoda gateway` put the Files and Batch APIs on
// their router, in one place: the data directory and the store (the control
// plane's, else <data dir>/batch.db), lines run through a copy of the
// process's routes as the batch's key (the control plane's internal
// principal) or with the static --api-key, always in the batch workload
// class; the routes authorize by the control plane's keys (everyone without
// one: a --api-key guard, if any, sits in front).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "batch/batch_service.h"
#include "control/control_plane.h"
#include "http/router.h"

namespace pagoda::batch {

struct BatchSetup {
  std::string data_dir;  // "": the APIs are off (routes answer 503)
  BatchOptions options;  // meter_usage is set here: with a control plane
  control::ControlPlane* control = nullptr;
  std::string api_key;   // without a control plane: the bearer key lines carry ("" = none)
};

// The service (not started) whose lines run through `routes`; nullptr when
// setup.data_dir is empty. Errors name --data-dir.
Result<std::unique_ptr<BatchService>> OpenBatchService(BatchSetup setup, std::shared_ptr<const http::Router> routes);

// AddBatchRoutes with the control plane's key as the owner.
void AddBatchRoutesFor(http::Router& router, BatchService* service, control::ControlPlane* control,
                       std::string how_to_enable);

}  // namespace pagoda::batch
