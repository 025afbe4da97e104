// POST /tokenize and POST /detokenize (not OpenAI endpoints; the field names
// follow vLLM, with llama.cpp's accepted as aliases).
//   /tokenize   {"model"?, "prompt" | "content" | "messages", "add_special_tokens" | "add_special"?,
//                "add_generation_prompt"?, "tools"? (messages only: rendered as a chat request's)}
//            -> {"tokens": [...], "count": N, "max_model_len": n_ctx}
//   /detokenize {"model"?, "tokens": [...]} -> {"prompt": text, "content": text}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/api_error.h"
#include "api/chat_request.h"
#include "api/tools.h"

namespace pagoda::api {

struct TokenizeRequest {
  std::string model;                            // "" = the default model
  std::optional<std::string> text;              // "prompt" / "content"
  std::optional<std::vector<ChatMessage>> messages;  // rendered with the chat template
  bool add_special = true;                      // BOS etc. (text only)
  bool add_generation_prompt = true;            // messages only
  std::vector<ToolFunction> tools;              // messages only: offered as in a chat request
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};

ApiResult<TokenizeRequest> ParseTokenizeRequest(std::string_view body, const RequestLimits& limits = {});
ApiResult<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body, const RequestLimits& limits = {});

nlohmann::json TokenizeResponseJson(const std::vector<int32_t>& tokens, int64_t max_model_len);
nlohmann::json DetokenizeResponseJson(std::string_view text);

}  // namespace pagoda::api
