// Test helper: parse and render a template in one call.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/chat_template.h"

namespace pagoda::jinja_test {

// The rendered text, or "ERROR: <status>" so that EXPECT_EQ shows both.
inline std::string Render(const std::string& src, const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object(),
                          const ChatTemplateOptions& options = {}) {
  auto t = ChatTemplate::Parse(src);
  if (!t.ok()) return "ERROR: " + t.status().ToString();
  auto r = t->Render(ctx, options);
  if (!r.ok()) return "ERROR: " + r.status().ToString();
  return *r;
}

inline bool IsError(const std::string& rendered) { return rendered.rfind("ERROR: ", 0) == 0; }

}  // namespace pagoda::jinja_test
