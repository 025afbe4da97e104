#include "tenancy/usage_report.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

namespace pagoda::tenancy {
namespace {

using GroupKey = std::tuple<std::string, std::string, std::string, int64_t, std::string>;

void Add(UsageRow* into, const UsageRow& r) {
  into->requests += r.requests;
  into->errors += r.errors;
  into->prompt_tokens += r.prompt_tokens;
  into->cached_tokens += r.cached_tokens;
  into->completion_tokens += r.completion_tokens;
  into->total_ms_sum += r.total_ms_sum;
  into->ttft_ms_sum += r.ttft_ms_sum;
  into->replica_hours += r.replica_hours;
  into->cost += r.cost;
}

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6f", v);
  return buf;
}

}  // namespace

double RowCost(const UsageRow& row, const Price& p) {
  const double uncached = static_cast<double>(std::max<int64_t>(0, row.prompt_tokens - row.cached_tokens));
  const double tokens = (uncached * p.input_per_mtok + static_cast<double>(row.cached_tokens) * p.cached_input_per_mtok +
                         static_cast<double>(row.completion_tokens) * p.output_per_mtok) /
                        1e6;
  const double factor = row.service_tier == WorkloadClassName(WorkloadClass::kBatch) ? p.batch_factor : 1.0;
  return tokens * factor + row.replica_hours * p.replica_hour;
}

UsageReport MakeUsageReport(const UsageQuery& query, std::vector<UsageRow> token_rows,
                            std::vector<UsageRow> replica_rows, const std::vector<Price>& prices) {
  std::map<std::string, const Price*> price_of;
  for (const Price& p : prices) price_of[p.model] = &p;
  std::set<std::string> unpriced;

  // Price per model, then sum into the groups asked for.
  std::map<GroupKey, UsageRow> groups;
  auto fold = [&](UsageRow r) {
    if (auto it = price_of.find(r.model); it != price_of.end()) {
      r.cost = RowCost(r, *it->second);
    } else {
      r.cost = 0;
      unpriced.insert(r.model);
    }
    GroupKey k{query.by_tenant ? r.tenant_id : "", query.by_key ? r.key_id : "", query.by_model ? r.model : "",
               query.by_day ? r.day_ms : 0, query.by_tier ? r.service_tier : ""};
    auto [it, inserted] = groups.try_emplace(k);
    if (inserted) {
      std::tie(it->second.tenant_id, it->second.key_id, it->second.model, it->second.day_ms,
               it->second.service_tier) = k;
    }
    Add(&it->second, r);
  };
  for (UsageRow& r : token_rows) fold(std::move(r));
  for (UsageRow& r : replica_rows) fold(std::move(r));

  UsageReport report;
  report.query = query;
  for (auto& [k, row] : groups) {
    Add(&report.total, row);
    report.rows.push_back(std::move(row));
  }
  report.unpriced_models.assign(unpriced.begin(), unpriced.end());
  return report;
}

Result<UsageReport> BuildUsageReport(TenantStore& store, const UsageQuery& query) {
  UsageQuery by_model = query;
  by_model.by_model = true;  // prices are per model ...
  by_model.by_tier = true;   // ... and batch tokens take the batch factor
  PAGODA_ASSIGN_OR_RETURN(auto tokens, store.QueryUsage(by_model));
  PAGODA_ASSIGN_OR_RETURN(auto replicas, store.QueryReplicaHours(by_model));
  PAGODA_ASSIGN_OR_RETURN(auto prices, store.ListPrices());
  if (!query.key_id.empty()) replicas.clear();  // replica-hours belong to no key
  return MakeUsageReport(query, std::move(tokens), std::move(replicas), prices);
}

std::string DayString(int64_t day_ms) {
  const std::time_t t = static_cast<std::time_t>(day_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
  return buf;
}

nlohmann::json UsageReportJson(const UsageReport& report) {
  const UsageQuery& q = report.query;
  auto row_json = [&](const UsageRow& r, bool grouped) {
    nlohmann::json j = nlohmann::json::object();
    if (grouped && q.by_tenant) j["tenant_id"] = r.tenant_id;
    if (grouped && q.by_key) j["key_id"] = r.key_id;
    if (grouped && q.by_model) j["model"] = r.model;
    if (grouped && q.by_day) j["day"] = DayString(r.day_ms);
    if (grouped && q.by_tier) j["service_tier"] = r.service_tier;
    j["requests"] = r.requests;
    j["errors"] = r.errors;
    j["prompt_tokens"] = r.prompt_tokens;
    j["cached_tokens"] = r.cached_tokens;
    j["completion_tokens"] = r.completion_tokens;
    j["total_ms_sum"] = r.total_ms_sum;
    j["ttft_ms_sum"] = r.ttft_ms_sum;
    j["replica_hours"] = r.replica_hours;
    j["cost"] = r.cost;
    return j;
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const UsageRow& r : report.rows) rows.push_back(row_json(r, true));
  return {{"rows", std::move(rows)}, {"total", row_json(report.total, false)},
          {"unpriced_models", report.unpriced_models}};
}

std::string CsvField(const std::string& f) {
  if (f.find_first_of(",\"\r\n") == std::string::npos) return f;
  std::string out = "\"";
  for (char c : f) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string UsageReportCsv(const UsageReport& report) {
  const UsageQuery& q = report.query;
  std::vector<std::string> header;
  if (q.by_tenant) header.push_back("tenant_id");
  if (q.by_key) header.push_back("key_id");
  if (q.by_model) header.push_back("model");
  if (q.by_day) header.push_back("day");
  if (q.by_tier) header.push_back("service_tier");
  for (const char* h : {"requests", "errors", "prompt_tokens", "cached_tokens", "completion_tokens", "total_ms_sum",
                        "ttft_ms_sum", "replica_hours", "cost"}) {
    header.push_back(h);
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i) out += ',';
      out += CsvField(fields[i]);
    }
    out += "\r\n";
  };
  line(header);
  for (const UsageRow& r : report.rows) {
    std::vector<std::string> f;
    if (q.by_tenant) f.push_back(r.tenant_id);
    if (q.by_key) f.push_back(r.key_id);
    if (q.by_model) f.push_back(r.model);
    if (q.by_day) f.push_back(DayString(r.day_ms));
    if (q.by_tier) f.push_back(r.service_tier);
    for (int64_t v : {r.requests, r.errors, r.prompt_tokens, r.cached_tokens, r.completion_tokens, r.total_ms_sum,
                      r.ttft_ms_sum}) {
      f.push_back(std::to_string(v));
    }
    f.push_back(Number(r.replica_hours));
    f.push_back(Number(r.cost));
    line(f);
  }
  return out;
}

}  // namespace pagoda::tenancy
