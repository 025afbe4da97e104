#include "api/generation_options.h"

#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

#include "api/json_fields.h"

namespace pagoda::api::internal {

namespace {

using nlohmann::json;

MaybeError ReadOptionalNumber(const json& v, std::string_view key, double min, double max, bool min_exclusive,
                              std::optional<double>* out) {
  double x;
  if (auto e = ReadNumber(v, key, min, max, min_exclusive, &x)) return e;
  *out = x;
  return std::nullopt;
}

MaybeError ReadKvTransferParams(const json& v, std::optional<KvTransferParams>* out) {
  if (!v.is_object()) return InvalidValue("kv_transfer_params", "Invalid 'kv_transfer_params': expected an object.");
  KvTransferParams p;
  for (const auto& [k, x] : v.items()) {
    if (x.is_null()) continue;
    MaybeError e;
    if (k == "do_remote_decode") e = ReadBool(x, "kv_transfer_params.do_remote_decode", &p.do_remote_decode);
    if (k == "remote_addr") e = ReadString(x, "kv_transfer_params.remote_addr", &p.remote_addr);
    if (k == "transfer_id") e = ReadString(x, "kv_transfer_params.transfer_id", &p.transfer_id);
    if (e) return e;
  }
  if (p.remote_addr.size() > 256 || p.transfer_id.size() > 128) {
    return InvalidValue("kv_transfer_params", "Invalid 'kv_transfer_params': remote_addr or transfer_id too long.");
  }
  if (p.do_remote_decode && (p.remote_addr.empty() || p.transfer_id.empty())) {
    return InvalidValue("kv_transfer_params",
                        "Invalid 'kv_transfer_params': do_remote_decode needs remote_addr and transfer_id.");
  }
  *out = std::move(p);
  return std::nullopt;
}

MaybeError ReadStop(const json& v, const RequestLimits& limits, std::vector<std::string>* out) {
  auto one = [&](const json& s, const std::string& param) -> MaybeError {
    std::string text;
    if (auto e = ReadString(s, param, &text)) return e;
    if (text.empty()) return InvalidValue(param, "Invalid '" + param + "': stop sequences must not be empty.");
    if (static_cast<int>(text.size()) > limits.max_stop_bytes) {
      return InvalidValue(param, "Invalid '" + param + "': a stop sequence may have at most " +
                                     std::to_string(limits.max_stop_bytes) + " bytes.");
    }
    out->push_back(std::move(text));
    return std::nullopt;
  };
  if (v.is_string()) return one(v, "stop");
  if (!v.is_array()) return InvalidType("stop", "a string or an array of strings");
  if (static_cast<int>(v.size()) > limits.max_stop) {
    return InvalidValue("stop", "Invalid 'stop': at most " + std::to_string(limits.max_stop) +
                                    " stop sequences are allowed, got " + std::to_string(v.size()) + ".");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (auto e = one(v[i], Path("stop", i))) return e;
  }
  return std::nullopt;
}

MaybeError ReadLogitBias(const json& v, const RequestLimits& limits, std::map<int32_t, float>* out) {
  if (!v.is_object()) return InvalidType("logit_bias", "an object mapping token ids to numbers");
  if (static_cast<int>(v.size()) > limits.max_logit_bias) {
    return InvalidValue("logit_bias", "Invalid 'logit_bias': at most " + std::to_string(limits.max_logit_bias) +
                                          " entries are allowed.");
  }
  for (const auto& [key, bias] : v.items()) {
    const std::string param = Path("logit_bias", key);
    int64_t id = -1;
    const auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || ptr != key.data() + key.size() || key.empty() || id < 0 ||
        id > std::numeric_limits<int32_t>::max()) {
      return InvalidValue("logit_bias", "Invalid 'logit_bias': keys must be token ids (non-negative integers).");
    }
    double b;
    if (auto e = ReadNumber(bias, param, -100.0, 100.0, false, &b)) return e;
    (*out)[static_cast<int32_t>(id)] = static_cast<float>(b);
  }
  return std::nullopt;
}

MaybeError ReadStreamOptions(const json& v, GenerationOptions* options) {
  if (!v.is_object()) return InvalidType("stream_options", "an object");
  for (const auto& [key, value] : v.items()) {
    const std::string param = Path("stream_options", key);
    if (key == "include_usage") {
      if (value.is_null()) continue;
      if (auto e = ReadBool(value, param, &options->include_usage)) return e;
    } else if (key == "continuous_usage_stats" || key == "include_obfuscation") {
      // vLLM's per-chunk usage / OpenAI's obfuscation padding: not produced.
      bool on = false;
      if (value.is_null()) continue;
      if (auto e = ReadBool(value, param, &on)) return e;
      if (on) return UnsupportedValue(param, "this server does not support it.");
    } else {
      return UnknownParameter(param);
    }
  }
  return std::nullopt;
}

}  // namespace

FieldOutcome ReadGenerationField(std::string_view key, const json& v, const RequestLimits& limits,
                                 GenerationOptions* o, std::optional<ApiError>* error) {
  auto done = [&](MaybeError e) {
    *error = std::move(e);
    return FieldOutcome::kHandled;
  };
  if (key == "model") {
    if (v.is_null()) return FieldOutcome::kHandled;
    return done(ReadString(v, key, &o->model));
  }
  if (v.is_null()) {
    // null means "absent" for every optional shared field.
    static constexpr std::string_view kNullable[] = {
        "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "presence_penalty",
        "frequency_penalty", "repetition_penalty", "n", "stop", "seed", "logit_bias", "stream",
        "stream_options", "user", "safety_identifier", "response_format", "grammar", "regex", "ignore_eos",
        "service_tier", "kv_transfer_params"};
    for (auto k : kNullable) {
      if (k == key) return FieldOutcome::kHandled;
    }
    return FieldOutcome::kNotMine;
  }
  if (key == "max_tokens" || key == "max_completion_tokens") {
    int64_t x;
    // 0 only for completions' echo (CheckMaxTokensPositive).
    if (auto e = ReadInt(v, key, 0, std::numeric_limits<int32_t>::max(), &x)) return done(std::move(e));
    // max_completion_tokens supersedes the deprecated max_tokens.
    if (key == "max_completion_tokens" || o->max_tokens_param != "max_completion_tokens") {
      o->max_tokens = x;
      o->max_tokens_param = std::string(key);
    }
    return FieldOutcome::kHandled;
  }
  if (key == "temperature") return done(ReadOptionalNumber(v, key, 0.0, 2.0, false, &o->temperature));
  if (key == "top_p") return done(ReadOptionalNumber(v, key, 0.0, 1.0, true, &o->top_p));
  if (key == "min_p") return done(ReadOptionalNumber(v, key, 0.0, 1.0, false, &o->min_p));
  if (key == "presence_penalty") return done(ReadOptionalNumber(v, key, -2.0, 2.0, false, &o->presence_penalty));
  if (key == "frequency_penalty") return done(ReadOptionalNumber(v, key, -2.0, 2.0, false, &o->frequency_penalty));
  if (key == "repetition_penalty") {
    return done(ReadOptionalNumber(v, key, 0.0, 10.0, true, &o->repetition_penalty));
  }
  if (key == "top_k") {
    int64_t x;
    if (auto e = ReadInt(v, key, -1, std::numeric_limits<int32_t>::max(), &x)) return done(std::move(e));
    o->top_k = static_cast<int32_t>(x < 0 ? 0 : x);
    return FieldOutcome::kHandled;
  }
  if (key == "n") {
    int64_t x;
    if (auto e = ReadInt(v, key, 1, limits.max_n, &x)) return done(std::move(e));
    o->n = static_cast<int>(x);
    return FieldOutcome::kHandled;
  }
  if (key == "seed") {
    int64_t x;
    if (auto e = ReadInt(v, key, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), &x)) {
      return done(std::move(e));
    }
    o->seed = x;
    return FieldOutcome::kHandled;
  }
  if (key == "stop") return done(ReadStop(v, limits, &o->stop));
  if (key == "logit_bias") return done(ReadLogitBias(v, limits, &o->logit_bias));
  if (key == "stream") return done(ReadBool(v, key, &o->stream));
  if (key == "ignore_eos") return done(ReadBool(v, key, &o->ignore_eos));
  if (key == "stream_options") return done(ReadStreamOptions(v, o));
  if (key == "user" || key == "safety_identifier") return done(ReadString(v, key, &o->user));
  if (key == "service_tier") {
    std::string tier;
    if (auto e = ReadString(v, key, &tier)) return done(std::move(e));
    if (tier == "auto") return FieldOutcome::kHandled;
    o->service_tier = ParseWorkloadClass(tier);
    if (!o->service_tier) {
      return done(InvalidValue(key, "service_tier must be one of 'auto', 'default', 'flex', 'priority', 'interactive', "
                                    "'batch', 'realtime'."));
    }
    return FieldOutcome::kHandled;
  }
  if (key == "kv_transfer_params") return done(ReadKvTransferParams(v, &o->kv_transfer));
  if (key == "response_format") return done(ReadResponseFormat(v, &o->structured.response_format));
  if (key == "grammar") return done(ReadConstraintText(v, key, &o->structured.grammar));
  if (key == "regex") return done(ReadConstraintText(v, key, &o->structured.regex));
  return FieldOutcome::kNotMine;
}

std::optional<ApiError> CheckMaxTokensPositive(const GenerationOptions& o) {
  if (!o.max_tokens || *o.max_tokens >= 1) return std::nullopt;
  int64_t unused;
  return ReadInt(json(*o.max_tokens), o.max_tokens_param, 1, std::numeric_limits<int32_t>::max(), &unused);
}

std::optional<ApiError> FinishGenerationOptions(const json& body, GenerationOptions* o) {
  const auto it = body.find("stream_options");
  if (it != body.end() && !it->is_null() && !o->stream) {
    return InvalidValue("stream_options",
                        "Invalid 'stream_options': only allowed when 'stream' is true.");
  }
  return CheckSingleConstraint(o->structured);
}

}  // namespace pagoda::api::internal
