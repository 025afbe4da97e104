// Usage reports: aggregated usage rows priced with the store's prices, as
// JSON (the usage API) and CSV (the CLI's export).
//
// Cost of a row = ((prompt - cached) * input_per_mtok + cached *
// cached_input_per_mtok + completion * output_per_mtok) / 1e6 * f +
// replica_hours * replica_hour, with the prices of the row's model, where f
// is the price's batch_factor for batch-tier rows and 1 otherwise. Rows are
// fetched per model and per service tier, priced, and then summed into the
// groups the query asked for (so a report not grouped by tier still prices
// its batch tokens at the batch factor); models without a price cost 0 and
// are listed in unpriced_models.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tenancy/records.h"
#include "tenancy/tenant_store.h"

namespace pagoda::tenancy {

struct UsageReport {
  UsageQuery query;
  std::vector<UsageRow> rows;  // grouped as query asks, ordered by tenant, key, model, day, tier
  UsageRow total;              // every row summed (grouping fields empty)
  std::vector<std::string> unpriced_models;
};

// Cost of one row whose model is `price.model` (batch_factor applies when
// row.service_tier is "batch").
double RowCost(const UsageRow& row, const Price& price);

// Builds a report from rows already fetched (tested without a store).
UsageReport MakeUsageReport(const UsageQuery& query, std::vector<UsageRow> token_rows_by_model,
                            std::vector<UsageRow> replica_rows_by_model, const std::vector<Price>& prices);

// QueryUsage (grouped by model and tier as well) + QueryReplicaHours (by
// model) + ListPrices.
Result<UsageReport> BuildUsageReport(TenantStore& store, const UsageQuery& query);

// {"rows": [...], "total": {...}, "unpriced_models": [...]}; days as "YYYY-MM-DD" (UTC).
// Rows carry "service_tier" (and the CSV a service_tier column after day)
// only when the query groups by tier.
nlohmann::json UsageReportJson(const UsageReport& report);
// Header + one line per row (+ no total line), CRLF line ends, RFC 4180 quoting.
std::string UsageReportCsv(const UsageReport& report);

// RFC 4180: quoted (with "" for ") when the field holds , " CR or LF.
std::string CsvField(const std::string& field);
// "YYYY-MM-DD" of a UTC day start.
std::string DayString(int64_t day_ms);

}  // namespace pagoda::tenancy
