// The one INSERT of usage records, shared by the tenant store's AppendUsage
// (the ledger's path) and the batch store, which writes a batch line's usage
// record in the same transaction as the line's result (batch/batch_store.h).
// A record whose request_id is already stored is ignored (idempotent).
// Validates every record first. Internal to the stores.
#pragma once

#include <span>

#include "base/status.h"
#include "tenancy/records.h"
#include "tenancy/sql_database.h"

namespace pagoda::tenancy {

Status InsertUsageRecords(SqlConnection& c, std::span<const UsageRecord> records);

}  // namespace pagoda::tenancy
