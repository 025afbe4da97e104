// ScheduleAdmin: the capacity schedule endpoints of the admin API (JSON; the
// /admin/ guard of AddAdminRoutes puts them behind the admin key):
//   GET    /admin/schedules                    {"now", "schedules": [entry per deployment]}
//   GET    /admin/schedules/MODEL/VERSION      one entry; 404 unknown deployment
//   PUT    /admin/schedules/MODEL/VERSION      body: ScheduleFromJson's form -> 200 + entry;
//                                              400 bad body (the field named), 404 unknown deployment
//   DELETE /admin/schedules/MODEL/VERSION      -> 200 + entry (shared pool); 404 unknown
//                                              deployment or no schedule
// VERSION is the last path segment (MODEL may hold '/'); both percent-decoded.
// Admin changes last until the next reload, which restores the config's.
// Entries: CapacityScheduler::ToJson. Errors are OpenAI-style error objects.
#pragma once

#include "gateway/capacity_scheduler.h"
#include "http/router.h"

namespace pagoda::gateway {

// `schedules` must outlive the router.
void AddScheduleRoutes(http::Router& router, CapacityScheduler* schedules);

}  // namespace pagoda::gateway
