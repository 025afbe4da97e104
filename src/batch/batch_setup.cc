#include "batch/batch_setup.h"

#include <variant>

#include "batch/batch_routes.h"

namespace pagoda::batch {

Result<std::unique_ptr<BatchService>> OpenBatchService(BatchSetup setup, std::shared_ptr<const http::Router> routes) {
  if (setup.data_dir.empty()) return std::unique_ptr<BatchService>();
  control::ControlPlane* cp = setup.control;
  // The directory first: the default store lives in it.
  auto files = FileStore::Open(setup.data_dir);
  if (!files.ok()) return files.status().WithContext("--data-dir");
  auto store = BatchStore::Open(cp != nullptr ? cp->options().store_url : setup.data_dir + "/batch.db");
  if (!store.ok()) return store.status().WithContext("--data-dir");
  auto decorate = [cp, key = setup.api_key](const LineCall& call, http::Request& r) {
    if (cp != nullptr) {
      r.headers.Add("authorization", "Bearer " + cp->InternalToken());
      r.headers.Add(control::kOnBehalfOfHeader, call.key_id);
    } else if (!key.empty()) {
      r.headers.Add("authorization", "Bearer " + key);
    }
    r.headers.Add(control::kServiceTierHeader, "batch");
  };
  setup.options.meter_usage = cp != nullptr;
  return std::make_unique<BatchService>(std::move(setup.options), std::move(store).value(), std::move(files).value(),
                                        std::make_unique<RouterLineExecutor>(std::move(routes), std::move(decorate)));
}

void AddBatchRoutesFor(http::Router& router, BatchService* service, control::ControlPlane* control,
                       std::string how_to_enable) {
  AddBatchRoutes(
      router, service,
      [control](const http::Request& r) -> std::variant<Owner, http::Response> {
        if (control == nullptr) return Owner{};
        auto who = control->Authenticate(r, "");
        if (auto* refused = std::get_if<http::Response>(&who)) return std::move(*refused);
        const auto& caller = std::get<control::Caller>(who);
        return Owner{caller.tenant.id, caller.key.id};
      },
      std::move(how_to_enable));
}

}  // namespace pagoda::batch
