#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

// Normalizes one run of valid UTF-8.
void AppendNfcValid(std::string_view run, std::string* out) {
  if (!MayChangeUnderNfc(run)) {
    out->append(run);
    return;
  }
  utf8proc_uint8_t* mapped = nullptr;
  // STABLE|COMPOSE is utf8proc_NFC without NULLTERM: the length bounds the
  // input, so embedded NUL bytes are ordinary characters.
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                   static_cast<utf8proc_ssize_t>(run.size()), &mapped,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
  if (n < 0) {
    // utf8proc rejects nothing that utf8::ValidSeqLen accepts; should its idea
    // of valid ever differ, keep the text as it is rather than lose it.
    out->append(run);
    return;
  }
  out->append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
}

}  // namespace

Result<Normalization> ReadNormalization(const GgufMetadata& md, std::string_view pre) {
  if (!md.Has(kKeyNormalizer)) return pre == "qwen2" ? Normalization::kNfc : Normalization::kNone;
  PAGODA_ASSIGN_OR_RETURN(std::string value, md.GetString(kKeyNormalizer));
  if (value == "nfc") return Normalization::kNfc;
  if (value == "none") return Normalization::kNone;
  return InvalidArgument("'" + std::string(kKeyNormalizer) + "' = '" + value +
                         "' is not supported (expected 'nfc' or 'none')");
}

bool MayChangeUnderNfc(std::string_view text) {
  // Lead bytes below 0xCC encode U+0000..U+02FF; continuation bytes are
  // 0x80..0xBF. Anything from U+0300 on has a lead byte >= 0xCC.
  for (char c : text) {
    if (static_cast<uint8_t>(c) >= 0xCC) return true;
  }
  return false;
}

void AppendNfc(std::string_view text, std::string* out) {
  if (!MayChangeUnderNfc(text)) {
    out->append(text);
    return;
  }
  size_t run_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = utf8::ValidSeqLen(text, i);
    if (n > 0) {
      i += n;
      continue;
    }
    AppendNfcValid(text.substr(run_start, i - run_start), out);
    out->push_back(text[i]);
    run_start = ++i;
  }
  AppendNfcValid(text.substr(run_start), out);
}

}  // namespace pagoda
