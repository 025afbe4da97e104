#include "engine/speed_bench.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>

#include "kernels/cpu/packed_weights.h"
#include "model/kv_cache.h"

namespace pagoda {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Result<SpeedBenchResult> RunSpeedBench(Model& model, const SpeedBenchOptions& opt) {
  using Clock = std::chrono::steady_clock;
  if (opt.n_prompt < 0 || opt.n_gen < 0 || opt.repetitions <= 0) {
    return InvalidArgument("bench sizes must be >= 0 and repetitions > 0");
  }
  if (opt.n_depth < 0) return InvalidArgument("bench depth must be >= 0");
  if (opt.n_parallel <= 0 || opt.n_parallel > 4096) return InvalidArgument("bench parallel must be in [1, 4096]");
  const int32_t n_ctx = opt.n_depth + std::max(opt.n_prompt, opt.n_gen) + 1;
  const int32_t n_par = opt.n_parallel;
  PAGODA_ASSIGN_OR_RETURN(auto kv, ContiguousKvCache::Create(model.kv_cache_spec(), n_par, n_ctx, opt.kv_type));
  std::vector<float> logits(static_cast<size_t>(model.n_vocab()) * static_cast<size_t>(n_par));
  std::mt19937_64 rng(opt.seed);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(model.n_vocab() - 1));
  Batch batch;
  SpeedBenchResult res;

  // Empties the cache and prefills n_depth random tokens into each of the
  // n_parallel sequences, untimed.
  auto reset = [&]() -> Status {
    for (int32_t s = 0; s < n_par; ++s) {
      kv->RemoveSequence(s);
      if (opt.n_depth == 0) continue;
      batch.Clear();
      for (int32_t i = 0; i < opt.n_depth; ++i) batch.Add(tok(rng), i, s, i + 1 == opt.n_depth);
      PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    }
    return Status::Ok();
  };
  auto run_pp = [&]() -> Result<double> {
    PAGODA_RETURN_IF_ERROR(reset());
    batch.Clear();
    for (int32_t i = 0; i < opt.n_prompt; ++i) batch.Add(tok(rng), opt.n_depth + i, 0, i + 1 == opt.n_prompt);
    auto t0 = Clock::now();
    PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    return opt.n_prompt / std::chrono::duration<double>(Clock::now() - t0).count();
  };
  int64_t expert_bytes = 0, tg_steps = 0;
  auto run_tg = [&]() -> Result<double> {
    PAGODA_RETURN_IF_ERROR(reset());
    const int64_t bytes0 = model.expert_bytes_read();
    auto t0 = Clock::now();
    for (int32_t i = 0; i < opt.n_gen; ++i) {
      batch.Clear();
      for (int32_t s = 0; s < n_par; ++s) batch.Add(tok(rng), opt.n_depth + i, s, true, /*is_decode=*/true);
      PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    }
    expert_bytes += model.expert_bytes_read() - bytes0;
    tg_steps += opt.n_gen;
    return static_cast<double>(n_par) * opt.n_gen / std::chrono::duration<double>(Clock::now() - t0).count();
  };

  if (opt.n_prompt > 0) {
    PAGODA_RETURN_IF_ERROR(run_pp().status());  // warm-up
    for (int r = 0; r < opt.repetitions; ++r) {
      PAGODA_ASSIGN_OR_RETURN(double tps, run_pp());
      res.pp_tokens_per_s.push_back(tps);
    }
  }
  if (opt.n_gen > 0) {
    PAGODA_RETURN_IF_ERROR(run_tg().status());
    expert_bytes = tg_steps = 0;  // the warm-up does not count
    for (int r = 0; r < opt.repetitions; ++r) {
      PAGODA_ASSIGN_OR_RETURN(double tps, run_tg());
      res.tg_tokens_per_s.push_back(tps);
    }
    res.tg_expert_bytes_per_step = tg_steps > 0 ? static_cast<double>(expert_bytes) / tg_steps : 0.0;
  }
  return res;
}

LinearWeights CountLinearWeights(const GgufFile& file, const DecodeWeightsInfo& decode) {
  LinearWeights lw;
  const bool has_output = file.FindTensor("output.weight") != nullptr;
  const GgufMetadata& md = file.metadata();
  const auto arch = md.GetStringOr("general.architecture", "");
  const std::string prefix = arch.ok() ? *arch + "." : "";
  const auto int_or_0 = [&](const std::string& key) {
    const auto v = md.GetIntOr(key, 0);
    return v.ok() ? static_cast<double>(*v) : 0.0;
  };
  const double n_expert = int_or_0(prefix + "expert_count");
  const double n_used = int_or_0(prefix + "expert_used_count");
  const bool packing = kernels::WeightPackingEnabled();
  const GgufTensorInfo* first = nullptr;
  for (const GgufTensorInfo& t : file.tensors()) {
    const double elements = static_cast<double>(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]);
    const bool expert = n_expert > 0 && n_used > 0 && t.name.find("_exps.") != std::string::npos;
    const double share = expert ? n_used / n_expert : 1.0;
    lw.total_params += elements;
    if (t.name == "token_embd.weight") {
      lw.active_params += t.ne[0];  // one row looked up
      if (!has_output) lw.active_params += elements;  // and the tied LM head
    } else {
      lw.active_params += share * elements;
    }
    if (t.n_dims < 2) continue;
    const bool embd = t.name == "token_embd.weight";
    if (embd && has_output) continue;
    const bool head = embd || t.name == "output.weight";
    if (first == nullptr && !head) first = &t;
    const bool packed = packing && kernels::CanPackWeight(file.View(t));
    auto g = std::find_if(lw.groups.begin(), lw.groups.end(),
                          [&](const LinearWeights::Group& x) {
                            return x.type == t.type && x.packed == packed && x.head == head;
                          });
    if (g == lw.groups.end()) g = lw.groups.insert(g, LinearWeights::Group{t.type, packed, head, 0, 0});
    ++g->n_tensors;
    g->bytes += t.nbytes;
    lw.decode_bytes += share * static_cast<double>(t.nbytes);
    if (expert) lw.expert_decode_bytes += share * static_cast<double>(t.nbytes);
    if (!head) lw.prefill_params += share * elements;
  }
  if (decode.type) {
    lw.decode_type = decode.type;
    lw.decode_bytes += static_cast<double>(decode.bytes - decode.source_bytes);
    if (first != nullptr && packing) {
      TensorView probe = file.View(*first);
      probe.type = *decode.type;
      lw.decode_packed = kernels::CanPackWeight(probe);
    }
  }
  return lw;
}

double TgBytesPerToken(double weight_bytes, const KvCacheSpec& kv, KvType kv_type, const SpeedBenchOptions& opt) {
  const int64_t elem = kernels::KvTypeSize(kv_type);
  const int64_t scale = kernels::KvTypeHasScales(kv_type) ? 1 : 0;  // one byte per (position, head)
  double per_position = 0;  // bytes of one cached position over all layers
  for (const KvLayerSpec& l : kv.layers) {
    per_position += static_cast<double>((l.k_width() + l.v_width()) * elem);
    per_position += static_cast<double>(scale * l.n_head_kv * (l.head_dim_v > 0 ? 2 : 1));
  }
  const double mean_positions = opt.n_depth + (opt.n_gen + 1) / 2.0;
  return weight_bytes / std::max(1, opt.n_parallel) + per_position * mean_positions;
}

}  // namespace pagoda
