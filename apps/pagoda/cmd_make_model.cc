// pagoda make-model: write a random-weight model (tests, benchmarks).
#include <cstdio>
#include <algorithm>
#include <cstring>

#include "cli_util.h"
#include "commands.h"
#include "gguf/gguf_file.h"
#include "model/random_model.h"

namespace pagoda::cli {

int CmdMakeModel(int argc, char** argv) {
  CLI::App app("Write a random-weight model of a given architecture, shape and tensor type", "make-model");
  RandomModelSpec spec;
  std::string out, type = "f16", output_type, expert_type, vocab_from, preset, gating, mla_layout = "current", pooling;
  spec.n_embd = 2048;
  spec.n_layer = 16;
  spec.n_head = 32;
  spec.n_head_kv = 8;
  spec.n_ff = 8192;
  spec.n_vocab = 32000;
  spec.n_ctx = 4096;
  // A preset sets the defaults the other flags then override, so it is
  // applied before parsing.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--preset") == 0 && i + 1 < argc) preset = argv[i + 1];
    if (std::strncmp(argv[i], "--preset=", 9) == 0) preset = argv[i] + 9;
  }
  if (!preset.empty()) {
    if (Status s = ApplyRandomModelPreset(preset, spec); !s.ok()) return Fail(s);
    spec.name = "pagoda-random-" + preset;
    if (spec.arch != "bert") {  // encoders are benchmarked as converted (F16)
      type = "q4_0";
      output_type = "q6_k";  // as llama-quantize does for Q4_0
    }
  }
  std::string presets;
  for (const std::string& n : RandomModelPresetNames()) presets += (presets.empty() ? "" : " | ") + n;
  app.add_option("--preset", preset, "a real model's shape: " + presets + " (then --type q4_0, --output-type q6_k)");
  app.add_option("-o,--output", out, "output GGUF path")->required();
  app.add_option("--arch", spec.arch, "llama | qwen2 | qwen3 | qwen2moe | qwen3moe | deepseek2 | glm4moe | bert");
  app.add_option("--pooling", pooling,
                 "<arch>.pooling_type: none | mean | cls | last | rank (bert rank: a reranker; adds a classifier head)");
  app.add_option("--n-cls-out", spec.n_cls_out, "bert: classifier head outputs (default 1 with --pooling rank)");
  app.add_option("--type", type,
                 "weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q4_k q5_k q6_k, or llama-quantize's mixes q4_k_m "
                 "q5_k_m (attn_v and ffn_down of its more-bits layers Q6_K; output Q6_K)");
  app.add_option("--output-type", output_type, "type of output.weight (default: --type)");
  app.add_option("--expert-type", expert_type, "type of the expert tensors (default: --type)");
  app.add_option("--n-embd", spec.n_embd, "embedding size");
  app.add_option("--n-layer", spec.n_layer, "layers");
  app.add_option("--n-head", spec.n_head, "attention heads");
  app.add_option("--n-head-kv", spec.n_head_kv, "KV heads");
  app.add_option("--head-dim", spec.head_dim, "head dimension (default n_embd / n_head)");
  app.add_option("--n-ff", spec.n_ff, "FFN width");
  app.add_option("--n-vocab", spec.n_vocab, "vocabulary size (synthetic vocab) ");
  app.add_option("--n-ctx", spec.n_ctx, "training context length");
  app.add_option("--rope-base", spec.rope_base, "RoPE base");
  app.add_flag("--tied", spec.tied_output, "tie the output projection to token_embd");
  app.add_option("--n-rot", spec.n_rot, "rope.dimension_count (default head_dim; glm4moe head_dim / 2)");
  CLI::Option* eps_opt = app.add_option("--rms-eps", spec.rms_eps, "RMSNorm epsilon (bert: the LayerNorm epsilon)");
  app.add_flag("--qk-norm", spec.qk_norm, "glm4moe: per-head Q/K RMSNorm");
  // Mixture of experts.
  app.add_option("--n-expert", spec.n_expert, "experts per MoE layer (0: dense)");
  app.add_option("--n-expert-used", spec.n_expert_used, "experts chosen per token");
  app.add_option("--n-ff-exp", spec.n_ff_exp, "expert FFN width");
  app.add_option("--n-expert-shared", spec.n_expert_shared, "deepseek2 / glm4moe: shared experts (width n_ff_exp each)");
  app.add_option("--n-ff-shexp", spec.n_ff_shexp, "qwen2moe: shared expert FFN width");
  app.add_option("--n-dense-lead", spec.n_layer_dense_lead, "deepseek2 / glm4moe: leading dense layers");
  app.add_option("--expert-weights-scale", spec.expert_weights_scale, "deepseek2 / glm4moe: routed weight scale");
  app.add_flag("--expert-weights-norm", spec.expert_weights_norm, "deepseek2 / glm4moe: renormalise the top-k weights");
  app.add_option("--expert-gating", gating, "deepseek2 / glm4moe: softmax | sigmoid");
  app.add_flag("--exp-probs-b", spec.exp_probs_b, "deepseek2 / glm4moe: expert selection bias");
  app.add_option("--n-expert-groups", spec.n_expert_groups, "deepseek2: expert groups");
  app.add_option("--n-group-used", spec.n_group_used, "deepseek2: groups kept per token");
  app.add_flag("--merged-gate-up", spec.merged_gate_up_exps, "one ffn_gate_up_exps tensor instead of gate and up");
  app.add_option("--nextn-layers", spec.nextn_predict_layers, "glm4moe: trailing NextN blocks (in --n-layer)");
  // Multi-head latent attention (deepseek2).
  app.add_option("--q-lora-rank", spec.q_lora_rank, "query LoRA rank (0: attn_q)");
  app.add_option("--kv-lora-rank", spec.kv_lora_rank, "latent KV rank");
  app.add_option("--qk-rope-dim", spec.qk_rope_dim, "rotary part of a query / key head");
  app.add_option("--qk-nope-dim", spec.qk_nope_dim, "non-rotary part of a query / key head");
  app.add_option("--v-head-dim", spec.v_head_dim, "value head size");
  app.add_option("--mla-layout", mla_layout, "current (attn_k_b / attn_v_b) | early (attn_kv_b)");
  app.add_option("--rope-scaling-factor", spec.rope_scaling_factor, "deepseek2: YaRN factor (0: none)");
  app.add_option("--rope-orig-ctx", spec.rope_scaling_orig_ctx, "YaRN original context length");
  app.add_option("--yarn-log-mul", spec.yarn_log_multiplier, "rope.scaling.yarn_log_multiplier (0.1 * mscale_all_dim)");
  app.add_option("--yarn-beta-fast", spec.yarn_beta_fast, "YaRN beta_fast (0: key not written)");
  app.add_option("--yarn-beta-slow", spec.yarn_beta_slow, "YaRN beta_slow (0: key not written)");
  app.add_option("--vocab-from", vocab_from, "copy tokenizer.* metadata from this GGUF");
  app.add_option("--seed", spec.seed, "RNG seed");
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;

  if (type == "q4_k_m" || type == "q5_k_m") {
    spec.more_bits_mix = true;
    type = type.substr(0, 4);
    if (output_type.empty()) output_type = "q6_k";
  }
  auto t = ParseDType(type);
  if (!t) return Fail("unknown --type '" + type + "'");
  spec.weight_type = *t;
  if (!output_type.empty()) {
    auto ot = ParseDType(output_type);
    if (!ot) return Fail("unknown --output-type '" + output_type + "'");
    spec.output_type = *ot;
  }
  if (!expert_type.empty()) {
    auto et = ParseDType(expert_type);
    if (!et) return Fail("unknown --expert-type '" + expert_type + "'");
    spec.expert_type = *et;
  }
  if (!gating.empty()) {
    if (gating != "softmax" && gating != "sigmoid") return Fail("--expert-gating must be softmax or sigmoid");
    spec.expert_gating_func = gating == "softmax" ? 1 : 2;
  }
  if (mla_layout != "current" && mla_layout != "early") return Fail("--mla-layout must be current or early");
  spec.mla_split_kv_b = mla_layout == "current";
  if (!pooling.empty()) {
    static const char* const kPooling[] = {"none", "mean", "cls", "last", "rank"};
    const auto it = std::find(std::begin(kPooling), std::end(kPooling), pooling);
    if (it == std::end(kPooling)) return Fail("--pooling must be none, mean, cls, last or rank");
    spec.pooling_type = int(it - std::begin(kPooling));
    if (spec.pooling_type == 4 && spec.arch == "bert" && spec.n_cls_out == 0) spec.n_cls_out = 1;
  }
  if (spec.arch == "bert") {
    spec.n_head_kv = spec.n_head;  // no grouped KV heads in bert
    if (preset.empty() && eps_opt->count() == 0) spec.rms_eps = 1e-12f;  // BERT's layer_norm_eps
  }
  if (!vocab_from.empty()) {
    auto f = GgufFile::Open(vocab_from);
    if (!f.ok()) return Fail(f.status());
    for (const auto& [k, v] : (*f)->metadata().entries()) {
      if (k.rfind("tokenizer.", 0) == 0) spec.tokenizer.Set(k, v);
    }
    if (!spec.tokenizer.Has("tokenizer.ggml.tokens")) return Fail(vocab_from + ": no tokenizer.ggml.tokens");
    spec.n_vocab = 0;  // the vocab file decides
  }
  if (Status s = WriteRandomModel(spec, out); !s.ok()) return Fail(s);
  std::fprintf(stderr, "pagoda: wrote %s (random weights)\n", out.c_str());
  return 0;
}

}  // namespace pagoda::cli
