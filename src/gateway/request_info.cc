#include "gateway/request_info.h"

#include <nlohmann/json.hpp>

namespace pagoda::gateway {
namespace {

void AppendContent(const nlohmann::json& content, std::string* out) {
  if (content.is_string()) {
    out->append(content.get_ref<const std::string&>());
  } else if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object()) {
        const auto t = part.find("text");
        if (t != part.end() && t->is_string()) out->append(t->get_ref<const std::string&>());
      }
    }
  }
}

}  // namespace

api::ApiResult<RequestInfo> ParseRequestInfo(std::string_view body, bool model_required) {
  RequestInfo info;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return api::InvalidJson("the request body is not valid JSON");
  if (!j.is_object()) return api::InvalidType("", "a JSON object");
  const auto m = j.find("model");
  if (m == j.end() || m->is_null()) {
    if (model_required) return api::MissingParameter("model");
  } else if (!m->is_string()) {
    return api::InvalidType("model", "a string");
  } else {
    info.model = m->get<std::string>();
  }
  if (const auto s = j.find("stream"); s != j.end() && s->is_boolean()) info.stream = s->get<bool>();
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    const auto t = j.find(key);
    if (t != j.end() && t->is_number_integer()) {
      info.max_tokens = t->get<int64_t>();
      break;
    }
  }
  if (const auto u = j.find("user"); u != j.end() && u->is_string()) info.user = u->get<std::string>();
  if (const auto t = j.find("service_tier"); t != j.end() && t->is_string()) {
    info.service_tier = ParseWorkloadClass(t->get_ref<const std::string&>());
  }
  if (const auto so = j.find("stream_options"); so != j.end() && so->is_object()) {
    const auto iu = so->find("include_usage");
    info.include_usage = iu != so->end() && iu->is_boolean() && iu->get<bool>();
  }
  if (const auto msgs = j.find("messages"); msgs != j.end() && msgs->is_array()) {
    for (const auto& msg : *msgs) {
      if (!msg.is_object()) continue;
      const auto c = msg.find("content");
      if (c != msg.end()) AppendContent(*c, &info.prompt_text);
    }
  } else if (const auto p = j.find("prompt"); p != j.end()) {
    if (p->is_string()) {
      info.prompt_text = p->get<std::string>();
    } else if (p->is_array()) {
      for (const auto& e : *p) {
        if (e.is_string()) info.prompt_text += e.get<std::string>();
        if (e.is_number_integer()) info.prompt_tokens += 1;  // token ids
      }
    }
  }
  info.prompt_tokens += (static_cast<int64_t>(info.prompt_text.size()) + 3) / 4;
  return info;
}

std::optional<WorkloadClass> RequestedClass(const RequestInfo& info, const http::Request& request) {
  if (const std::string* h = request.headers.Find(kServiceTierHeader)) {
    if (const auto c = ParseWorkloadClass(*h)) return c;
  }
  return info.service_tier;
}

WorkloadClass RequestClass(const RequestInfo& info, const http::Request& request) {
  return RequestedClass(info, request).value_or(WorkloadClass::kInteractive);
}

std::string RewriteModel(std::string_view body, std::string_view model) {
  return RewriteUpstreamBody(body, model, /*force_usage=*/false);
}

std::string RewriteUpstreamBody(std::string_view body, std::string_view model, bool force_usage) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::string(body);
  // Only the gateway asks a replica to ship KV (the prefill leg); a client's
  // own kv_transfer_params would send its prompt's KV wherever it names.
  bool changed = j.erase("kv_transfer_params") != 0;
  if (!model.empty()) {
    const auto m = j.find("model");
    if (m == j.end() || !m->is_string() || m->get_ref<const std::string&>() != model) {
      j["model"] = std::string(model);
      changed = true;
    }
  }
  if (force_usage) {
    const auto s = j.find("stream");
    nlohmann::json& so = j["stream_options"];
    const bool streams = s != j.end() && s->is_boolean() && s->get<bool>();
    if (streams && (!so.is_object() || !so.value("include_usage", false))) {
      if (!so.is_object()) so = nlohmann::json::object();
      so["include_usage"] = true;
      changed = true;
    } else if (so.is_null()) {
      j.erase("stream_options");
    }
  }
  return changed ? j.dump() : std::string(body);
}

}  // namespace pagoda::gateway
