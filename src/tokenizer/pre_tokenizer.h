// PreTokenizer: splits raw text into words before byte-level BPE, with the
// regex sequence that tokenizer.ggml.pre names (same families as llama.cpp).
// Each regex further splits every piece the previous one produced; matches
// and the gaps between them both become pieces, so no byte is ever dropped.
// Regexes run on PCRE2 with Unicode properties (UTF + UCP, JIT when
// available); invalid UTF-8 is accepted and never matched by a class, so each
// invalid byte ends up in a gap. Immutable and thread-safe after Create().
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda {

class PreTokenizer {
 public:
  // `name`: the tokenizer.ggml.pre value; "" means "default". Unknown names
  // are an InvalidArgument error that lists the supported ones.
  static Result<std::unique_ptr<PreTokenizer>> Create(std::string_view name);
  // Builds one from explicit regexes (tests, future importers).
  static Result<std::unique_ptr<PreTokenizer>> FromRegexes(std::string name,
                                                           const std::vector<std::string>& regexes);
  ~PreTokenizer();

  // Appends the words of `text` (views into it, never empty) to `words`.
  void Split(std::string_view text, std::vector<std::string_view>* words) const;

  const std::string& name() const { return name_; }
  // Words that are whole vocabulary tokens skip merging (Llama 3, Tekken).
  bool ignore_merges() const { return ignore_merges_; }
  // Whether this family adds BOS when the file does not say.
  bool default_add_bos() const { return default_add_bos_; }
  static std::vector<std::string> SupportedNames();

 private:
  struct Regex;
  PreTokenizer() = default;

  std::string name_;
  bool ignore_merges_ = false;
  bool default_add_bos_ = false;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace pagoda
