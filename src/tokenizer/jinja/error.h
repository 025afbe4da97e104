// The error the Jinja interpreter raises internally: template syntax errors,
// raise_exception(), type errors and exceeded limits. It never leaves
// src/tokenizer: ChatTemplate::Parse and Render turn it into a Status.
#pragma once

#include <stdexcept>
#include <string>

#include "base/status.h"

namespace pagoda::jinja {

class JinjaError : public std::runtime_error {
 public:
  explicit JinjaError(const std::string& message, StatusCode code = StatusCode::kInvalidArgument)
      : std::runtime_error(message), code_(code) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

}  // namespace pagoda::jinja
