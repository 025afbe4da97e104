// OpenAI's JSON shapes for files, batches, lists and batch output lines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "batch/batch_types.h"

namespace pagoda::batch {

nlohmann::json FileJson(const FileRecord& f);    // {"id", "object": "file", "bytes", ...}
nlohmann::json BatchJson(const BatchRecord& b);  // {"id", "object": "batch", ...}
// {"object": "list", "data", "first_id", "last_id", "has_more"}
nlohmann::json ListJson(std::vector<nlohmann::json> data, const std::vector<std::string>& ids, bool has_more);

// One output line: {"id", "custom_id", "response": {"status_code",
// "request_id", "body"}, "error": null}. `body` is the endpoint's JSON
// (kept as sent when it does not parse).
std::string AnswerLine(std::string_view request_id, std::string_view custom_id, int status_code,
                       std::string_view body);
// One error line for a request that never ran: {"id", "custom_id",
// "response": null, "error": {"code", "message"}}.
std::string ErrorLine(std::string_view request_id, std::string_view custom_id, std::string_view code,
                      std::string_view message);

}  // namespace pagoda::batch
