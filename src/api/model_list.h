// GET /v1/models: {"object": "list", "data": [{"id", "object": "model",
// "created", "owned_by", "max_model_len"}]}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace pagoda::api {

struct ModelCard {
  std::string id;
  int64_t created = 0;
  std::string owned_by = "pagoda";
  std::optional<int64_t> max_model_len;  // the context size (vLLM's extension); left out when absent
};

struct ModelList {
  std::vector<ModelCard> data;
  nlohmann::json ToJson() const;
};

}  // namespace pagoda::api
