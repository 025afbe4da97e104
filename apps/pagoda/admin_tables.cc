#include "admin_tables.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

namespace pagoda::cli {
namespace {

using json = nlohmann::json;

// The items of a list object, or the one object.
std::vector<json> Items(const json& j) {
  if (j.is_object() && j.value("object", "") == "list" && j.contains("data") && j["data"].is_array()) {
    return std::vector<json>(j["data"].begin(), j["data"].end());
  }
  return {j};
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A field as text: strings as they are, numbers compactly, null/absent "-".
std::string Text(const json& obj, const char* field) {
  if (!obj.is_object() || !obj.contains(field)) return "-";
  const json& v = obj[field];
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return Num(v.get<double>());
  return v.dump();
}

// 0 = unlimited for limits.
std::string LimitText(const json& obj, const char* field) {
  const std::string t = Text(obj, field);
  return t == "0" ? "unlimited" : t;
}

std::string Money(const json& obj, const char* field) {
  if (!obj.is_object() || !obj.contains(field) || !obj[field].is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", obj[field].get<double>());
  return buf;
}

}  // namespace

std::string TimeText(const json& seconds) {
  if (!seconds.is_number_integer()) return "-";
  const std::time_t t = static_cast<std::time_t>(seconds.get<int64_t>());
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return "-";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string RenderTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  measure(header);
  for (const auto& r : rows) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      l += row[i];
      if (i + 1 < row.size()) l += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += l + "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string TenantsTable(const json& j) {
  std::vector<std::vector<std::string>> rows;
  for (const json& t : Items(j)) {
    const std::string max_class = Text(t, "max_class");
    rows.push_back({Text(t, "id"), Text(t, "name"), Text(t, "plan"), Text(t, "weight"),
                    max_class == "-" ? "(plan)" : max_class, Text(t, "default_class"),
                    Text(t, "share_cache_across_keys"), Text(t, "dedicated_deployment"), Text(t, "disabled"),
                    TimeText(t.value("created_at", json()))});
  }
  return RenderTable({"ID", "NAME", "PLAN", "WEIGHT", "MAX_CLASS", "DEFAULT_CLASS", "SHARED_CACHE", "DEDICATED",
                      "DISABLED", "CREATED"},
                     rows);
}

std::string KeysTable(const json& j) {
  std::vector<std::vector<std::string>> rows;
  for (const json& k : Items(j)) {
    std::string models = "*";
    if (k.contains("models") && k["models"].is_array() && !k["models"].empty()) {
      models.clear();
      for (const json& m : k["models"]) models += (models.empty() ? "" : ",") + m.get<std::string>();
    }
    const std::string max_class = Text(k, "max_class");
    rows.push_back({Text(k, "id"), Text(k, "tenant"), Text(k, "name"), Text(k, "status"), models,
                    max_class == "-" ? "(tenant)" : max_class, TimeText(k.value("created_at", json())),
                    TimeText(k.value("expires_at", json())), TimeText(k.value("revoked_at", json()))});
  }
  return RenderTable({"ID", "TENANT", "NAME", "STATUS", "MODELS", "MAX_CLASS", "CREATED", "EXPIRES", "REVOKED"},
                     rows);
}

std::string LimitsTable(const json& j) {
  std::vector<std::vector<std::string>> rows;
  for (const json& l : Items(j)) {
    const std::string model = Text(l, "model");
    rows.push_back({Text(l, "scope"), Text(l, "id"), model.empty() ? "*" : model, LimitText(l, "rpm"),
                    LimitText(l, "tpm"), LimitText(l, "concurrent")});
  }
  return RenderTable({"SCOPE", "ID", "MODEL", "RPM", "TPM", "CONCURRENT"}, rows);
}

std::string ReservationsTable(const json& j) {
  std::vector<std::vector<std::string>> rows;
  for (const json& r : Items(j)) rows.push_back({Text(r, "tenant"), Text(r, "model"), Text(r, "tokens_per_second")});
  return RenderTable({"TENANT", "MODEL", "TOKENS/S"}, rows);
}

std::string PricesTable(const json& j) {
  std::vector<std::vector<std::string>> rows;
  for (const json& p : Items(j)) {
    rows.push_back({Text(p, "model"), Text(p, "input_per_mtok"), Text(p, "cached_input_per_mtok"),
                    Text(p, "output_per_mtok"), Text(p, "replica_hour"), Text(p, "batch_factor")});
  }
  return RenderTable({"MODEL", "INPUT/MTOK", "CACHED/MTOK", "OUTPUT/MTOK", "REPLICA/HOUR", "BATCH_FACTOR"}, rows);
}

std::string UsageTable(const json& report) {
  std::vector<std::string> groups;
  if (report.contains("group_by") && report["group_by"].is_array()) {
    for (const json& g : report["group_by"]) groups.push_back(g.get<std::string>());
  }
  auto group_field = [](const std::string& g) { return g == "tenant" ? "tenant_id" : g == "key" ? "key_id" : g; };
  std::vector<std::string> header;
  for (const auto& g : groups) {
    std::string h = g;
    std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::toupper(c); });
    header.push_back(h);
  }
  for (const char* h : {"REQUESTS", "ERRORS", "PROMPT", "CACHED", "COMPLETION", "REPLICA_H", "COST"}) {
    header.push_back(h);
  }
  auto counts = [](const json& r, std::vector<std::string>* row) {
    for (const char* f : {"requests", "errors", "prompt_tokens", "cached_tokens", "completion_tokens"}) {
      row->push_back(Text(r, f));
    }
    row->push_back(Text(r, "replica_hours"));
    row->push_back(Money(r, "cost"));
  };
  std::vector<std::vector<std::string>> rows;
  if (report.contains("rows") && report["rows"].is_array()) {
    for (const json& r : report["rows"]) {
      std::vector<std::string> row;
      for (const auto& g : groups) {
        const std::string v = Text(r, group_field(g).c_str());
        row.push_back(v.empty() ? "-" : v);
      }
      counts(r, &row);
      rows.push_back(std::move(row));
    }
  }
  if (report.contains("total")) {
    std::vector<std::string> row(groups.size(), "");
    if (!row.empty()) row[0] = "TOTAL";
    counts(report["total"], &row);
    rows.push_back(std::move(row));
  }
  std::string out = RenderTable(header, rows);
  if (report.contains("unpriced_models") && report["unpriced_models"].is_array() &&
      !report["unpriced_models"].empty()) {
    out += "No price set (cost 0) for:";
    for (const json& m : report["unpriced_models"]) out += " " + m.get<std::string>();
    out += "\n";
  }
  return out;
}

}  // namespace pagoda::cli
