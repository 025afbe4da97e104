// multipart/form-data bodies (RFC 7578), as file uploads send them
// (OpenAI's POST /v1/files): the boundary from the Content-Type header, then
// each part's name, filename and bytes. Parts are views into the body.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::http {

struct FormPart {
  std::string name;                     // Content-Disposition name
  std::optional<std::string> filename;  // present for a file part
  std::string content_type;             // the part's Content-Type, "" when absent
  std::string_view data;
};

// InvalidArgument with a message for the client: not multipart/form-data, no
// boundary, a part without a Content-Disposition name, or a body that ends
// before the closing boundary.
Result<std::vector<FormPart>> ParseMultipartForm(std::string_view content_type, std::string_view body);

}  // namespace pagoda::http
