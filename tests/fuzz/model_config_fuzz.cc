// libFuzzer target: for any input that parses as GGUF, ReadModelConfig must
// return a Status (never crash, never overflow) under every ArchTraits
// variant the architectures in src/model/arch use, with the key prefix taken
// from general.architecture as the model registry does; a config it accepts
// must hold the invariants later code sizes buffers by. Built with clang
// under ASan+UBSan; only model_config.cc of src/model is compiled in.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_arch_traits.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace pagoda {
namespace {

// Names the invariant that failed before aborting (the crash report alone
// does not say which).
void CheckAt(bool ok, const char* what, int line) {
  if (ok) return;
  std::fprintf(stderr, "model config invariant failed (line %d): %s\n", line, what);
  std::abort();
}
#define Check(cond) CheckAt((cond), #cond, __LINE__)

// What model_config.h promises of an accepted config.
void CheckInvariants(const GgufFile& file, const ArchTraits& traits, const ModelConfig& c) {
  Check(c.n_vocab >= 1 && c.n_embd >= 1 && c.n_layer >= 1 && c.n_ff >= 1 && c.n_ctx_train >= 1);
  Check(c.n_head >= 1 && c.n_head_kv >= 1 && c.n_head % c.n_head_kv == 0);
  Check(c.head_dim_k >= 1 && c.head_dim_v >= 1);
  Check(c.n_rot >= 2 && c.n_rot <= c.head_dim_k && c.n_rot % 2 == 0);
  Check(c.rope_base > 1.0 && c.rope_freq_scale > 0.0 && c.rms_eps > 0.0f);
  Check(c.rope_freq_factors.empty() || static_cast<int64_t>(c.rope_freq_factors.size()) == c.n_rot / 2);
  Check(c.rope_neox == traits.rope_neox);
  if (c.yarn.enabled) Check(c.yarn.n_ctx_orig >= 1 && c.yarn.attn_mscale >= 1.0);
  const MoeConfig& m = c.moe;
  if (m.n_expert > 0) {
    Check(m.n_expert_used >= 1 && m.n_expert_used <= m.n_expert);
    Check(m.n_ff_exp >= 1 && m.n_ff_shexp >= 0 && m.n_expert_shared >= 0);
    Check(m.n_group >= 1 && m.n_expert % m.n_group == 0);
    Check(m.n_group_used >= 1 && m.n_group_used <= m.n_group);
    Check(m.n_expert_used <= m.n_group_used * (m.n_expert / m.n_group));
    Check(m.n_leading_dense >= 0 && m.n_leading_dense <= c.n_layer + c.n_layer_skipped);
    Check(m.w_scale > 0.0f);
    if (traits.moe_norm != ArchTraits::MoeNorm::kFromFile) {
      Check(m.norm_w == (traits.moe_norm == ArchTraits::MoeNorm::kAlways));
    }
  }
  if (traits.mla) {
    Check(c.mla.kv_lora_rank >= 1 && c.mla.head_dim_nope >= 1 && c.mla.head_dim_v >= 1);
    Check(c.mla.head_dim_rope == c.n_rot && c.mla.q_lora_rank >= 0);
  } else {
    Check(c.mla.kv_lora_rank == 0);
  }
  Check(c.n_layer_skipped >= 0 && (traits.skip_nextn_layers || c.n_layer_skipped == 0));
  Check(c.tied_output == (file.FindTensor("output.weight") == nullptr));
}

}  // namespace
}  // namespace pagoda

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda;
  auto file = GgufFile::FromMemory("fuzz.gguf", data, size);
  if (!file.ok()) return 0;
  const GgufFile& f = **file;
  auto arch = f.metadata().GetStringOr("general.architecture", "llama");
  if (!arch.ok()) return 0;
  for (int v = 0; v < fuzz::kArchTraitsVariants; ++v) {
    const ArchTraits traits = fuzz::ArchTraitsVariant(v);
    auto config = ReadModelConfig(f, *arch, traits);
    if (config.ok()) {
      CheckInvariants(f, traits, *config);
    } else {
      (void)config.status().ToString();
    }
  }
  return 0;
}
