#include "tenancy/usage_sql.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/workload_class.h"

namespace pagoda::tenancy {

Status InsertUsageRecords(SqlConnection& c, std::span<const UsageRecord> records) {
  for (const UsageRecord& r : records) PAGODA_RETURN_IF_ERROR(ValidateUsageRecord(r));
  // Multi-row INSERTs of up to 64 records: one round trip each on PostgreSQL.
  constexpr size_t kRowsPerStatement = 64;
  constexpr const char* kRow = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  std::vector<SqlValue> p;
  for (size_t begin = 0; begin < records.size(); begin += kRowsPerStatement) {
    const size_t n = std::min(kRowsPerStatement, records.size() - begin);
    std::string sql =
        "INSERT INTO usage_records (request_id, tenant_id, key_id, model, deployment, version, prompt_tokens, "
        "cached_tokens, completion_tokens, queue_ms, ttft_ms, total_ms, status, http_status, started_at_ms, "
        "service_tier) VALUES ";
    p.clear();
    p.reserve(n * 16);
    for (size_t i = 0; i < n; ++i) {
      const UsageRecord& r = records[begin + i];
      if (i) sql += ", ";
      sql += kRow;
      p.insert(p.end(), {r.request_id, r.tenant_id, r.key_id, r.model, r.deployment, r.version, r.prompt_tokens,
                         r.cached_tokens, r.completion_tokens, r.queue_ms, r.ttft_ms, r.total_ms,
                         std::string(UsageStatusName(r.status)), int64_t{r.http_status}, r.started_at_ms,
                         std::string(WorkloadClassName(r.service_tier))});
    }
    sql += " ON CONFLICT (request_id) DO NOTHING";
    PAGODA_RETURN_IF_ERROR(c.Exec(sql, p).status());
  }
  return Status::Ok();
}

}  // namespace pagoda::tenancy
