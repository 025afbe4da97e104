// RerankRequest and ScoreRequest: POST /v1/rerank in the form Jina and Cohere
// clients send (query, documents as strings or {"text": ...} objects,
// top_n, return_documents), and POST /v1/score as vLLM defines it (text_1
// against text_2: one to one, one to many, or pairwise lists). Both become a
// list of (query, document) pairs scored by the model (docs/EMBEDDINGS.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"

namespace pagoda::api {

struct RerankRequest {
  std::string model;
  std::string query;
  std::vector<std::string> documents;  // at least one
  std::optional<int64_t> top_n;        // >= 1; more than the documents means all
  bool return_documents = true;        // Jina's and vLLM's default
  std::optional<int64_t> truncate_prompt_tokens;
};

struct ScoreRequest {
  std::string model;
  // Pairs (text_1[i], text_2[i]); a single text_1 is paired with every text_2.
  std::vector<std::string> text_1, text_2;
  std::optional<int64_t> truncate_prompt_tokens;
};

// Documents (or text_2 entries) per request.
inline constexpr int kMaxRerankDocuments = 1024;

// Unknown fields are skipped: Cohere's and Jina's clients send their own
// (rank_fields, max_chunks_per_doc).
ApiResult<RerankRequest> ParseRerankRequest(std::string_view body);
ApiResult<ScoreRequest> ParseScoreRequest(std::string_view body);

}  // namespace pagoda::api
