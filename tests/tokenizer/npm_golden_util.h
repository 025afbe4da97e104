// Helpers for the golden tests that run the node references in
// tests/tokenizer/npm (hf_import_golden.cc, wpm_golden.cc,
// chat_template_golden.cc): running node, reading files, and comparing a
// tokenizer's ids with a reference's {"cat", "text", "ids"} lines.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_shell.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::testing {

inline const std::filesystem::path& NpmReferenceDir() {
  static const std::filesystem::path dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/tokenizer/npm";
  return dir;
}

// Why a node reference cannot run here ("" when it can): node missing, or
// `npm ci` not run in tests/tokenizer/npm (the packages named must exist).
inline std::string NodeReferenceSkipReason(const std::vector<std::string>& packages) {
  for (const auto& p : packages) {
    if (!std::filesystem::exists(NpmReferenceDir() / "node_modules" / p)) return "run npm ci in tests/tokenizer/npm";
  }
  std::string out;
  if (RunShell("node --version", &out) != 0) return "node is not on PATH";
  return "";
}

inline std::string JsonQuoted(const std::string& s) { return nlohmann::json(s).dump(); }

inline std::string IdsToString(const std::vector<TokenId>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ids[i]);
  }
  out += ']';
  return out;
}

// Encodes the text of every reference line `select` accepts (no BOS/EOS,
// special-token text parsed, as the references do) and expects the
// reference's ids; reports the first differences by category. Returns the
// number of lines compared.
inline int ExpectSameIdsAsReference(const std::string& name, const Tokenizer& tok,
                                    const std::vector<nlohmann::json>& entries,
                                    bool (*select)(const std::string& cat), const std::string& reference) {
  std::string first_diffs;
  int total = 0, mismatches = 0;
  std::map<std::string, int> by_category;
  for (const nlohmann::json& e : entries) {
    const std::string cat = e["cat"].get<std::string>();
    if (!select(cat)) continue;
    const std::string text = e["text"].get<std::string>();
    const std::vector<TokenId> want = e["ids"].get<std::vector<TokenId>>();
    const std::vector<TokenId> got = tok.Encode(text, /*add_special=*/false, /*parse_special=*/true);
    ++total;
    if (got == want) continue;
    ++mismatches;
    ++by_category[cat];
    if (mismatches <= 8) {
      first_diffs += "  [" + cat + "] " + JsonQuoted(text) + "\n    want " + IdsToString(want) +
                     "\n    got  " + IdsToString(got) + "\n";
    }
  }
  std::string cats;
  for (const auto& [cat, n] : by_category) cats += " " + cat + "=" + std::to_string(n);
  EXPECT_EQ(mismatches, 0) << name << ": " << mismatches << " of " << total << " strings differ from "
                           << reference << " (by category:" << cats << ")\n" << first_diffs;
  return total;
}

}  // namespace pagoda::testing
