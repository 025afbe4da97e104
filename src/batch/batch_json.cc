#include "batch/batch_json.h"

namespace pagoda::batch {
namespace {

using nlohmann::json;

json Seconds(int64_t ms) { return ms ? json(ms / 1000) : json(nullptr); }

json ParsedOr(std::string_view text, json fallback) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? std::move(fallback) : j;
}

}  // namespace

json FileJson(const FileRecord& f) {
  return json{{"id", f.id},
              {"object", "file"},
              {"bytes", f.bytes},
              {"created_at", f.created_at / 1000},
              {"expires_at", Seconds(f.expires_at)},
              {"filename", f.filename},
              {"purpose", f.purpose},
              {"status", "processed"},
              {"status_details", nullptr}};
}

json BatchJson(const BatchRecord& b) {
  auto id_or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  return json{{"id", b.id},
              {"object", "batch"},
              {"endpoint", b.endpoint},
              {"errors", ParsedOr(b.errors, nullptr)},
              {"input_file_id", b.input_file_id},
              {"completion_window", b.completion_window},
              {"status", BatchStatusName(b.status)},
              {"output_file_id", id_or_null(b.output_file_id)},
              {"error_file_id", id_or_null(b.error_file_id)},
              {"created_at", b.created_at / 1000},
              {"in_progress_at", Seconds(b.in_progress_at)},
              {"expires_at", Seconds(b.expires_at)},
              {"finalizing_at", Seconds(b.finalizing_at)},
              {"completed_at", Seconds(b.completed_at)},
              {"failed_at", Seconds(b.failed_at)},
              {"expired_at", Seconds(b.expired_at)},
              {"cancelling_at", Seconds(b.cancelling_at)},
              {"cancelled_at", Seconds(b.cancelled_at)},
              {"request_counts",
               {{"total", b.counts.total}, {"completed", b.counts.completed}, {"failed", b.counts.failed}}},
              {"metadata", ParsedOr(b.metadata, nullptr)}};
}

json ListJson(std::vector<json> data, const std::vector<std::string>& ids, bool has_more) {
  json j{{"object", "list"}, {"data", std::move(data)}, {"has_more", has_more}};
  j["first_id"] = ids.empty() ? json(nullptr) : json(ids.front());
  j["last_id"] = ids.empty() ? json(nullptr) : json(ids.back());
  return j;
}

std::string AnswerLine(std::string_view request_id, std::string_view custom_id, int status_code,
                       std::string_view body) {
  json j{{"id", request_id},
         {"custom_id", custom_id},
         {"response",
          {{"status_code", status_code}, {"request_id", request_id}, {"body", ParsedOr(body, json(std::string(body)))}}},
         {"error", nullptr}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ErrorLine(std::string_view request_id, std::string_view custom_id, std::string_view code,
                      std::string_view message) {
  json j{{"id", request_id},
         {"custom_id", custom_id.empty() ? json(nullptr) : json(custom_id)},
         {"response", nullptr},
         {"error", {{"code", code}, {"message", message}}}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace pagoda::batch
