// GgufMetadata: the ordered key/value metadata of a GGUF file, also built in
// memory (by the writer, make-model and the tokenizer.json importer).
// Typed getters return Status errors that name the key.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_value.h"

namespace pagoda {

class GgufMetadata {
 public:
  // Inserts or replaces; insertion order is kept (replacing keeps the position).
  void Set(std::string key, GgufValue value);
  bool Erase(std::string_view key);
  const GgufValue* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<std::string, GgufValue>>& entries() const { return entries_; }

  Result<std::string> GetString(std::string_view key) const;
  Result<int64_t> GetInt(std::string_view key) const;    // any integer type
  Result<double> GetFloat(std::string_view key) const;   // any numeric type
  Result<bool> GetBool(std::string_view key) const;
  Result<std::vector<std::string>> GetStringArray(std::string_view key) const;
  Result<std::vector<float>> GetFloatArray(std::string_view key) const;   // numeric elements
  Result<std::vector<int64_t>> GetIntArray(std::string_view key) const;   // integer elements

  // Defaults for optional keys (a wrong type is still an error).
  Result<int64_t> GetIntOr(std::string_view key, int64_t dflt) const;
  Result<double> GetFloatOr(std::string_view key, double dflt) const;
  Result<bool> GetBoolOr(std::string_view key, bool dflt) const;
  Result<std::string> GetStringOr(std::string_view key, std::string dflt) const;

 private:
  std::vector<std::pair<std::string, GgufValue>> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace pagoda
