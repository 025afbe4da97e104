// Human-readable tables for `pagoda admin`: one renderer per kind of admin
// API object. Each takes the API's JSON (one object, or a {"object":"list",
// "data":[...]} list) and returns aligned text ending in '\n'. Fields the
// server leaves out print as "-"; a key's secret is never part of a table
// (cmd_admin.cc prints it on its own line, once).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pagoda::cli {

// Columns padded to their widest cell, two spaces apart; the last column unpadded.
std::string RenderTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

std::string TenantsTable(const nlohmann::json& j);
std::string KeysTable(const nlohmann::json& j);
std::string LimitsTable(const nlohmann::json& j);
std::string ReservationsTable(const nlohmann::json& j);
std::string PricesTable(const nlohmann::json& j);
// The usage report: its group columns, counts and cost, then a TOTAL line and
// the models without a price.
std::string UsageTable(const nlohmann::json& report);

// Unix seconds -> "2026-01-10 12:00:00Z"; null -> "-".
std::string TimeText(const nlohmann::json& seconds);

}  // namespace pagoda::cli
