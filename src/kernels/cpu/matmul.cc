// MatMul driver: validation, ISA dispatch, activation conversion, threading.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quantize.h"

namespace pagoda::kernels {
namespace {

Isa Detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2")) {
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
      __builtin_cpu_supports("bmi2")) {
    return Isa::kAvx2;
  }
#endif
  return Isa::kScalar;
}

Isa InitialIsa() {
  Isa isa = Detect();
  // PAGODA_ISA=scalar|avx2|avx512 lowers the choice (for A/B runs); never raises it.
  if (const char* env = std::getenv("PAGODA_ISA")) {
    const std::string v = env;
    Isa want = v == "scalar" ? Isa::kScalar : v == "avx2" ? Isa::kAvx2 : Isa::kAvx512;
    if (static_cast<int>(want) < static_cast<int>(isa)) isa = want;
  }
  return isa;
}

std::atomic<Isa>& ActiveIsaRef() {
  static std::atomic<Isa> isa{InitialIsa()};
  return isa;
}

// 64-byte aligned, grow-only scratch owned by one thread.
class Scratch {
 public:
  uint8_t* Get(size_t bytes) {
    if (bytes > cap_) {
      cap_ = std::max(bytes, cap_ * 2);
      buf_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (cap_ + 63) / 64 * 64)));
    }
    return buf_.get();
  }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> buf_;
  size_t cap_ = 0;
};

thread_local Scratch t_act_scratch;
thread_local Scratch t_panel_scratch;

const internal::Plan* SelectPlan(DType type, int64_t n_tokens) {
  const Isa isa = ActiveIsa();
  const internal::Plan* p = nullptr;
  if (isa == Isa::kAvx512) p = internal::Avx512Plan(type, n_tokens);
  if (!p && static_cast<int>(isa) >= static_cast<int>(Isa::kAvx2)) p = internal::Avx2Plan(type, n_tokens);
  if (!p) p = internal::ScalarPlan(type, n_tokens);
  return p;
}

// Activation conversion is worth splitting across threads only for prefill.
constexpr int64_t kParallelConvertElems = 1 << 16;

}  // namespace

Isa DetectedIsa() {
  static const Isa isa = Detect();
  return isa;
}

void SetIsaForTesting(Isa isa) {
  PAGODA_CHECK(static_cast<int>(isa) <= static_cast<int>(DetectedIsa())) << "ISA " << IsaName(isa) << " not supported here";
  ActiveIsaRef().store(isa);
}

Isa ActiveIsa() { return ActiveIsaRef().load(std::memory_order_relaxed); }

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

Status CheckMatMulWeight(const TensorView& w) {
  const auto info = LookupDType(static_cast<uint32_t>(w.type));
  if (!info || !info->weights_supported) {
    return Unimplemented("MatMul: weight " + w.name + " has unsupported type " +
                         (info ? std::string(info->name) : std::to_string(static_cast<uint32_t>(w.type))));
  }
  if (w.data == nullptr) return InvalidArgument("MatMul: weight " + w.name + " has no data");
  if (w.ne[0] <= 0 || w.ne[0] % info->block_size != 0) {
    return InvalidArgument("MatMul: weight " + w.name + " row length " + std::to_string(w.ne[0]) +
                           " is not a multiple of the " + info->name + " block size");
  }
  if (w.rows() <= 0) return InvalidArgument("MatMul: weight " + w.name + " has no rows");
  if (w.nbytes != 0 && w.nbytes < w.rows() * w.row_bytes()) {
    return InvalidArgument("MatMul: weight " + w.name + " data is shorter than its shape");
  }
  return Status::Ok();
}

void MatMulReference(const TensorView& w, const float* x, int64_t n_tokens, float* y) {
  const int64_t n_in = w.ne[0];
  const int64_t n_out = w.rows();
  std::vector<float> row(n_in);
  for (int64_t r = 0; r < n_out; ++r) {
    PAGODA_CHECK(DequantizeRow(w.type, w.row(r), row.data(), n_in).ok());
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * n_in;
      double acc = 0.0;
      for (int64_t k = 0; k < n_in; ++k) acc += static_cast<double>(row[k]) * xt[k];
      y[t * n_out + r] = static_cast<float>(acc);
    }
  }
}

void MatMul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (n_tokens <= 0) return;
  const int64_t n_in = w.ne[0];
  const int64_t n_out = w.rows();
  const internal::Plan* plan = SelectPlan(w.type, n_tokens);
  PAGODA_CHECK(plan != nullptr) << "no MatMul kernel for " << DTypeName(w.type);

  const int64_t act_stride = (plan->act_row_bytes(n_in) + 63) / 64 * 64;
  uint8_t* act = t_act_scratch.Get(static_cast<size_t>(act_stride * n_tokens));
  const int nth = pool.size();
  if (n_tokens * n_in >= kParallelConvertElems && nth > 1) {
    pool.Run([&](int ith, int n) {
      for (int64_t t = ith; t < n_tokens; t += n) plan->convert_act(x + t * n_in, n_in, act + t * act_stride);
    });
  } else {
    for (int64_t t = 0; t < n_tokens; ++t) plan->convert_act(x + t * n_in, n_in, act + t * act_stride);
  }

  const int64_t chunk = plan->row_chunk;
  const int64_t n_chunks = (n_out + chunk - 1) / chunk;
  const uint8_t* wdata = static_cast<const uint8_t*>(w.data);
  const int64_t w_stride = w.row_bytes();
  auto work = [&](int ith, int n) {
    // Contiguous chunk ranges per thread: each streams its own part of W.
    const int64_t c0 = n_chunks * ith / n;
    const int64_t c1 = n_chunks * (ith + 1) / n;
    uint8_t* panel = nullptr;
    int64_t panel_stride = 0;
    if (plan->pack_rows) {
      panel_stride = plan->panel_row_bytes(n_in);
      panel = t_panel_scratch.Get(static_cast<size_t>(panel_stride * chunk));
    }
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t r0 = c * chunk;
      const int64_t nr = std::min(chunk, n_out - r0);
      const uint8_t* wr = wdata + r0 * w_stride;
      if (panel) {
        plan->pack_rows(w.type, wr, w_stride, nr, n_in, panel);
        plan->compute(panel, panel_stride, nr, act, act_stride, n_tokens, n_in, y + r0, n_out);
      } else {
        plan->compute(wr, w_stride, nr, act, act_stride, n_tokens, n_in, y + r0, n_out);
      }
    }
  };
  if (nth > 1 && n_chunks > 1) {
    pool.Run(work);
  } else {
    work(0, 1);
  }
}

}  // namespace pagoda::kernels
