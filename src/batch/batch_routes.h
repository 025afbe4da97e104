// The HTTP face of BatchService: OpenAI's Files API (POST/GET /v1/files,
// GET/DELETE /v1/files/{id}, GET /v1/files/{id}/content) and Batch API
// (POST/GET /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel),
// with OpenAI's objects, cursor pagination (after, limit) and errors.
// Every route first authorizes the caller (the host's rule: the control
// plane's key, --api-key, or nobody); another tenant's ids are 404.
#pragma once

#include <functional>
#include <string>
#include <variant>

#include "batch/batch_service.h"
#include "http/router.h"

namespace pagoda::batch {

using Authorize = std::function<std::variant<Owner, http::Response>(const http::Request&)>;

// `service` null: the routes exist and answer 503 with `how_to_enable`.
void AddBatchRoutes(http::Router& router, BatchService* service, Authorize authorize, std::string how_to_enable);

// The HTTP status for a service error (404 not found, 400 invalid, 409 a
// state that forbids it, 413 too large, 503 store unreachable, 500 else).
int HttpStatusOf(const Status& st);

}  // namespace pagoda::batch
