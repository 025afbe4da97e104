// The ArchTraits variants the architectures in src/model/arch set, for the
// model-config fuzzer and the seeds that check themselves against it.
#pragma once

#include <string_view>

#include "model/model_config.h"

namespace pagoda::fuzz {

constexpr int kArchTraitsVariants = 6;
constexpr std::string_view kArchTraitsNames[kArchTraitsVariants] = {"llama",    "qwen2",     "qwen2moe",
                                                                    "qwen3moe", "deepseek2", "glm4moe"};

// As llama.cc, qwen2.cc (qwen3.cc alike), qwen2moe.cc, qwen3moe.cc,
// deepseek2.cc and glm4moe.cc set them.
inline ArchTraits ArchTraitsVariant(int variant) {
  ArchTraits t;
  switch (variant) {
    case 0: t.moe_norm = ArchTraits::MoeNorm::kAlways; break;
    case 1: t.rope_neox = true; break;
    case 2:
      t.rope_neox = true;
      t.moe_norm = ArchTraits::MoeNorm::kNever;
      break;
    case 3:
      t.rope_neox = true;
      t.moe_norm = ArchTraits::MoeNorm::kAlways;
      break;
    case 4: t.mla = true; break;
    case 5:
      t.rope_neox = true;
      t.default_gating = MoeConfig::Gating::kSigmoid;
      t.skip_nextn_layers = true;
      break;
  }
  return t;
}

}  // namespace pagoda::fuzz
