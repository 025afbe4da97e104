// libFuzzer target: the GGUF parser must return a Status (never crash, never
// read out of bounds) for any byte string. Built with clang under ASan+UBSan.
#include <cstddef>
#include <cstdint>

#include "gguf/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = pagoda::ParseGguf(data, size);
  if (parsed.ok()) {
    // Touch every tensor byte range the parser accepted: ASan flags any that
    // is out of bounds.
    volatile uint8_t sink = 0;
    for (const auto& t : parsed->tensors) {
      if (t.nbytes > 0) {
        const uint8_t* p = data + parsed->data_offset + t.offset;
        sink ^= p[0];
        sink ^= p[t.nbytes - 1];
      }
    }
    for (const auto& [key, value] : parsed->metadata.entries()) {
      (void)value.ToDisplayString();
    }
  }
  return 0;
}
