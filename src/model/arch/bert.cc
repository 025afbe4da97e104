// bert: BERT-family encoders (BGE, E5, MiniLM, and bge-reranker-style
// cross-encoders) as llama.cpp's converter writes them: token_embd,
// token_types (optional; row 0 is added to every token, as llama.cpp fixes
// the token type to 0), position_embd (absolute), token_embd_norm
// (LayerNorm weight + bias), per layer attn_{q,k,v,output} with biases,
// attn_output_norm, ffn_up / ffn_down with biases (GELU), layer_output_norm;
// optional classifier head cls (dense + tanh) and cls.output. Keys:
// bert.attention.layer_norm_epsilon, bert.attention.causal (must be false),
// bert.pooling_type (ModelConfig::pooling). See encoder_model.h.
#include "kernels/cpu/quantize.h"
#include "model/arch/arch.h"
#include "model/encoder_model.h"
#include "model/model_registry.h"
#include "model/weight_loader.h"

namespace pagoda {
namespace {

Status LoadBlock(const WeightLoader& w, int l, const ModelConfig& c, EncoderBlock& b) {
  auto name = [l](const char* s) { return WeightLoader::LayerName(l, s); };
  const int64_t q_width = c.n_head * c.head_dim_k, kv_width = c.n_head_kv * c.head_dim_k;
  PAGODA_ASSIGN_OR_RETURN(b.wq, w.Linear(name("attn_q.weight"), c.n_embd, q_width));
  PAGODA_ASSIGN_OR_RETURN(b.wk, w.Linear(name("attn_k.weight"), c.n_embd, kv_width));
  PAGODA_ASSIGN_OR_RETURN(b.wv, w.Linear(name("attn_v.weight"), c.n_embd, kv_width));
  PAGODA_ASSIGN_OR_RETURN(b.wo, w.Linear(name("attn_output.weight"), q_width, c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(b.bq, w.Vector(name("attn_q.bias"), q_width));
  PAGODA_ASSIGN_OR_RETURN(b.bk, w.Vector(name("attn_k.bias"), kv_width));
  PAGODA_ASSIGN_OR_RETURN(b.bv, w.Vector(name("attn_v.bias"), kv_width));
  PAGODA_ASSIGN_OR_RETURN(b.bo, w.Vector(name("attn_output.bias"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(b.attn_norm_w, w.Vector(name("attn_output_norm.weight"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(b.attn_norm_b, w.Vector(name("attn_output_norm.bias"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(b.up, w.Linear(name("ffn_up.weight"), c.n_embd, c.n_ff));
  PAGODA_ASSIGN_OR_RETURN(b.b_up, w.Vector(name("ffn_up.bias"), c.n_ff));
  PAGODA_ASSIGN_OR_RETURN(b.down, w.Linear(name("ffn_down.weight"), c.n_ff, c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(b.b_down, w.Vector(name("ffn_down.bias"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(b.out_norm_w, w.Vector(name("layer_output_norm.weight"), c.n_embd));
  PAGODA_ASSIGN_OR_RETURN(b.out_norm_b, w.Vector(name("layer_output_norm.bias"), c.n_embd));
  return Status::Ok();
}

// Rows of a 2-D tensor, or 0 when absent.
int64_t Rows(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.FindTensor(name);
  return t != nullptr ? t->ne[1] : 0;
}

Status LoadClassifier(const WeightLoader& w, const ModelConfig& c, EncoderWeights& e) {
  const GgufFile& f = w.file();
  e.has_cls = w.Has("cls.weight");
  if (!e.has_cls) {
    if (c.pooling == PoolingType::kRank) {
      return InvalidArgument(f.path() + ": pooling_type rank needs the classifier head (tensor 'cls.weight')");
    }
    return Status::Ok();
  }
  const int64_t n_cls = Rows(f, "cls.weight");
  PAGODA_ASSIGN_OR_RETURN(e.cls, w.Linear("cls.weight", c.n_embd, n_cls));
  PAGODA_ASSIGN_OR_RETURN(e.cls_b, w.Vector("cls.bias", n_cls));
  e.has_cls_out = w.Has("cls.output.weight");
  if (e.has_cls_out) {
    const int64_t n_out = Rows(f, "cls.output.weight");
    PAGODA_ASSIGN_OR_RETURN(e.cls_out, w.Linear("cls.output.weight", n_cls, n_out));
    PAGODA_ASSIGN_OR_RETURN(e.cls_out_b, w.Vector("cls.output.bias", n_out));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Model>> LoadBert(std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                        const ModelOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(*file, "bert", ArchTraits{}));
  const GgufMetadata& md = file->metadata();
  auto causal = md.GetBoolOr("bert.attention.causal", false);
  if (!causal.ok()) return causal.status().WithContext(file->path());
  if (*causal) return Unimplemented(file->path() + ": 'bert.attention.causal' = true is not supported");
  auto eps = md.GetFloatOr("bert.attention.layer_norm_epsilon", 1e-12);
  if (!eps.ok()) return eps.status().WithContext(file->path());
  if (!(*eps >= 1e-30 && *eps < 1.0)) {
    return InvalidArgument(file->path() + ": 'bert.attention.layer_norm_epsilon' must be in [1e-30, 1)");
  }
  if (config.head_dim_k != config.head_dim_v) {
    return InvalidArgument(file->path() + ": bert needs key_length = value_length");
  }
  if (config.moe.n_expert != 0) return Unimplemented(file->path() + ": bert with experts is not supported");

  EncoderWeights e;
  e.norm_eps = static_cast<float>(*eps);
  if (kernels::WeightPackingEnabled()) e.packed_store = std::make_unique<kernels::PackedWeightStore>(pool);
  const WeightLoader w(*file, nullptr, e.packed_store.get());
  const int64_t n_embd = config.n_embd;
  PAGODA_ASSIGN_OR_RETURN(e.token_embd, w.Embedding("token_embd.weight", n_embd, config.n_vocab));
  const int64_t n_pos = Rows(*file, "position_embd.weight");
  if (n_pos < 1) return NotFound(file->path() + ": missing tensor 'position_embd.weight'");
  PAGODA_ASSIGN_OR_RETURN(e.position_embd, w.Embedding("position_embd.weight", n_embd, n_pos));
  if (const int64_t n_types = Rows(*file, "token_types.weight"); n_types > 0) {
    PAGODA_ASSIGN_OR_RETURN(TensorView types, w.Embedding("token_types.weight", n_embd, n_types));
    e.token_type0.resize(n_embd);
    PAGODA_RETURN_IF_ERROR(kernels::DequantizeRow(types.type, types.row(0), e.token_type0.data(), n_embd));
  }
  PAGODA_ASSIGN_OR_RETURN(e.embd_norm_w, w.Vector("token_embd_norm.weight", n_embd));
  PAGODA_ASSIGN_OR_RETURN(e.embd_norm_b, w.Vector("token_embd_norm.bias", n_embd));
  e.blocks.resize(config.n_layer);
  for (int l = 0; l < config.n_layer; ++l) PAGODA_RETURN_IF_ERROR(LoadBlock(w, l, config, e.blocks[l]));
  PAGODA_RETURN_IF_ERROR(LoadClassifier(w, config, e));
  PAGODA_ASSIGN_OR_RETURN(auto model,
                          EncoderModel::Create(std::move(file), std::move(config), std::move(e), pool, options));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace

void RegisterBert(ArchRegistry& registry) { registry.Register("bert", LoadBert); }

}  // namespace pagoda
