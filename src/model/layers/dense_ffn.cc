#include "model/layers/dense_ffn.h"

#include "kernels/cpu/matmul.h"

namespace pagoda {

Result<std::unique_ptr<DenseFfn>> DenseFfn::Load(const WeightLoader& w, int layer,
                                                 const ModelConfig& c) {
  return Load(w, layer, c.n_embd, c.n_ff, "");
}

Result<std::unique_ptr<DenseFfn>> DenseFfn::Load(const WeightLoader& w, int layer, int64_t n_embd,
                                                 int64_t n_ff, const std::string& suffix) {
  auto f = std::unique_ptr<DenseFfn>(new DenseFfn());
  f->n_ff_ = n_ff;
  auto name = [&](const char* s) { return WeightLoader::LayerName(layer, (s + suffix + ".weight").c_str()); };
  PAGODA_ASSIGN_OR_RETURN(f->gate_, w.Linear(name("ffn_gate"), n_embd, n_ff));
  PAGODA_ASSIGN_OR_RETURN(f->up_, w.Linear(name("ffn_up"), n_embd, n_ff));
  PAGODA_ASSIGN_OR_RETURN(f->down_, w.Linear(name("ffn_down"), n_ff, n_embd));
  return f;
}

int64_t DenseFfn::ScratchFloats(int64_t n_tokens) const {
  return 2 * Round16(n_tokens * n_ff_);
}

void DenseFfn::Forward(const ForwardContext& ctx, const float* x, float* out) const {
  const int64_t n = ctx.n_tokens;
  float* gate = ctx.scratch;                            // [n, n_ff]
  float* up = gate + Round16(n * n_ff_);                // [n, n_ff]
  const PhasedTarget gate_up[] = {{&gate_, gate}, {&up_, up}};
  PhasedMatMulShared(gate_up, x, ctx.runs, *ctx.pool);
  kernels::SiluMul(gate, up, n * n_ff_, gate);
  PhasedMatMul(down_, gate, ctx.runs, out, *ctx.pool);
}

}  // namespace pagoda
