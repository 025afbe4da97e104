// ModelFingerprint: a 64-bit identity of a model file for caches that outlive
// the process (the KV offload tier, kv/disk_tier.h): equal fingerprints mean
// the same architecture, hyperparameters, tokenizer and weights, so KV blocks
// one computed are valid for the other. XXH3-64 over the file size, every
// metadata key with its value's display form, every tensor's name, type,
// shape and offset, and the first and last 4 KiB of every tensor's data
// (random-weight files with equal metadata differ there). Reads a few
// pages per tensor; call once at load.
#pragma once

#include <cstdint>
#include <string_view>

#include "gguf/gguf_file.h"

namespace pagoda {

// `extra` folds in what else changes the KV a replica computes from the
// same file (e.g. "decode-weights=q4_0").
uint64_t ModelFingerprint(const GgufFile& file, std::string_view extra = {});

}  // namespace pagoda
