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

std::atomic<BatchPath>& BatchPathRef() {
  static std::atomic<BatchPath> path{[] {
    const char* env = std::getenv("PAGODA_BATCH_PATH");
    const auto p = env ? ParseBatchPath(env) : std::nullopt;
    return p ? *p : BatchPath::kAuto;
  }()};
  return path;
}

thread_local Scratch t_act_scratch;
thread_local Scratch t_panel_scratch;

const internal::Plan* SelectPlan(DType type, int64_t n_tokens) {
  const Isa isa = ActiveIsa();
  const BatchPath path = ActiveBatchPath();
  const internal::Plan* p = nullptr;
  if (isa == Isa::kAvx512) p = internal::Avx512Plan(type, n_tokens, path);
  if (!p && static_cast<int>(isa) >= static_cast<int>(Isa::kAvx2)) p = internal::Avx2Plan(type, n_tokens, path);
  if (!p) p = internal::ScalarPlan(type, n_tokens);
  return p;
}

// The plan reading w.packed (packed_weights.h; every token count, single
// tokens included), or null when this call cannot use it: a copy packed for
// another ISA, or a batch path forced to a kernel family that does not read
// packed weights.
const internal::Plan* SelectPackedPlan(DType type, const void* packed, int packed_isa, int64_t n_tokens) {
  const Isa isa = ActiveIsa();
  if (packed == nullptr || packed_isa != static_cast<int>(isa)) return nullptr;
  const BatchPath path = ActiveBatchPath();
  if (path != BatchPath::kAuto && path != BatchPath::kPanel) return nullptr;
  if (isa == Isa::kAvx512) return internal::Avx512PackedPlan(type, n_tokens);
  if (isa == Isa::kAvx2) return internal::Avx2PackedPlan(type, n_tokens);
  return nullptr;
}

int64_t PackedRowStride(DType type, int packed_isa, int64_t n_in) {
  return packed_isa == static_cast<int>(Isa::kAvx512) ? internal::Avx512PackedRowStride(type, n_in)
                                                       : internal::Avx2PackedRowStride(type, n_in);
}

// Activation conversion is worth splitting across threads only for prefill.
constexpr int64_t kParallelConvertElems = 1 << 16;
// Below this many multiply-adds a MatMul runs on the calling thread: waking
// and joining the pool costs a few microseconds, about what one core needs
// for 2^17 f32 or quantized multiply-adds, so tiny models (stories260K) would
// otherwise decode slower on two threads than on one.
constexpr int64_t kMinParallelMacs = 1 << 17;

}  // namespace

Isa DetectedIsa() {
  static const Isa isa = Detect();
  return isa;
}

void SetIsaForTesting(Isa isa) {
  PAGODA_CHECK(static_cast<int>(isa) <= static_cast<int>(DetectedIsa())) << "ISA " << IsaName(isa) << " not supported here";
  ActiveIsaRef().store(isa);
}

void SetBatchPathForTesting(BatchPath path) { BatchPathRef().store(path); }

BatchPath ActiveBatchPath() { return BatchPathRef().load(std::memory_order_relaxed); }

const char* BatchPathName(BatchPath path) {
  switch (path) {
    case BatchPath::kAuto: return "auto";
    case BatchPath::kLegacy: return "legacy";
    case BatchPath::kGemv: return "gemv";
    case BatchPath::kPanel: return "panel";
    case BatchPath::kGemm: return "gemm";
  }
  return "?";
}

std::optional<BatchPath> ParseBatchPath(std::string_view name) {
  for (BatchPath p : {BatchPath::kAuto, BatchPath::kLegacy, BatchPath::kGemv, BatchPath::kPanel, BatchPath::kGemm}) {
    if (name == BatchPathName(p)) return p;
  }
  return std::nullopt;
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

const char* PlanName(DType type, int64_t n_tokens, bool packed) {
  const internal::Plan* p =
      packed ? SelectPackedPlan(type, &type, static_cast<int>(ActiveIsa()), n_tokens) : nullptr;
  if (p == nullptr) p = SelectPlan(type, n_tokens);
  return p != nullptr ? p->name : "none";
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

namespace {

// One weight of a call, resolved to its plan and activations.
struct Part {
  const internal::Plan* plan;
  const uint8_t* wdata;
  int64_t w_stride, n_out, chunk0, n_chunks;
  DType type;
  const uint8_t* act;
  int64_t act_stride;
  float* y;
  int64_t n_in, n_tokens;
};

// Rows are handed out in grains of whole row chunks from a shared counter,
// over the rows of all parts. Grains shrink as the work runs out (each takes
// 1/(2*nth) of what is left, at least one chunk), so the threads finish within
// about one chunk of each other, even when one of them is preempted or slowed
// by a neighbour on its core, at a few atomic operations per call.
struct Job {
  const Part* parts = nullptr;
  int64_t total_chunks = 0, grain_div = 2, panel_bytes = 0;
  int64_t macs = 0;  // multiply-adds of all parts
  std::atomic<int64_t> next{0};

  void Work() {
    uint8_t* panel = panel_bytes > 0 ? t_panel_scratch.Get(static_cast<size_t>(panel_bytes)) : nullptr;
    int64_t g0 = next.load(std::memory_order_relaxed);
    for (;;) {
      if (g0 >= total_chunks) break;
      const int64_t take = std::max<int64_t>(1, (total_chunks - g0) / grain_div);
      if (!next.compare_exchange_weak(g0, g0 + take, std::memory_order_relaxed)) continue;
      const int64_t g1 = g0 + take;
      int64_t i = 0;
      for (int64_t c = g0; c < g1; ++c) {
        while (c >= parts[i].chunk0 + parts[i].n_chunks) ++i;
        const Part& pt = parts[i];
        const internal::Plan& p = *pt.plan;
        const int64_t r0 = (c - pt.chunk0) * p.row_chunk;
        const int64_t nr = std::min(p.row_chunk, pt.n_out - r0);
        const uint8_t* wr = pt.wdata + r0 * pt.w_stride;
        if (p.pack_rows) {
          const int64_t ps = p.panel_row_bytes(pt.n_in);
          p.pack_rows(pt.type, wr, pt.w_stride, nr, pt.n_in, panel);
          p.compute(panel, ps, nr, pt.act, pt.act_stride, pt.n_tokens, pt.n_in, pt.y + r0, pt.n_out);
        } else {
          p.compute(wr, pt.w_stride, nr, pt.act, pt.act_stride, pt.n_tokens, pt.n_in, pt.y + r0, pt.n_out);
        }
      }
      g0 = next.load(std::memory_order_relaxed);
    }
  }
};

thread_local std::vector<Part> t_parts;
thread_local std::vector<int64_t> t_act_offset;
thread_local std::vector<const float*> t_x;
thread_local std::vector<uint8_t> t_converts;

}  // namespace

void MatMulGrouped(std::span<const MatMulGroupTarget> targets, ThreadPool& pool) {
  std::vector<Part>& parts = t_parts;
  std::vector<int64_t>& act_offset = t_act_offset;
  std::vector<const float*>& xs = t_x;  // [part] its input rows
  std::vector<uint8_t>& converts = t_converts;  // [part] converts its activation copy
  parts.clear();
  act_offset.clear();
  xs.clear();
  converts.clear();
  Job job;
  int64_t act_bytes = 0, convert_elems = 0;
  for (const MatMulGroupTarget& t : targets) {
    if (t.n_tokens <= 0) continue;
    const TensorView& w = *t.w;
    Part pt{};
    pt.n_in = w.ne[0];
    pt.n_tokens = t.n_tokens;
    pt.plan = SelectPackedPlan(w.type, w.packed, w.packed_isa, t.n_tokens);
    if (pt.plan != nullptr) {
      pt.wdata = static_cast<const uint8_t*>(w.packed);
      pt.w_stride = PackedRowStride(w.type, w.packed_isa, pt.n_in);
    } else {
      pt.plan = SelectPlan(w.type, t.n_tokens);
      PAGODA_CHECK(pt.plan != nullptr) << "no MatMul kernel for " << DTypeName(w.type);
      pt.wdata = static_cast<const uint8_t*>(w.data);
      pt.w_stride = w.row_bytes();
    }
    pt.n_out = w.rows();
    pt.type = w.type;
    pt.y = t.y;
    pt.act_stride = (pt.plan->act_row_bytes(pt.n_in) + 63) / 64 * 64;
    pt.chunk0 = job.total_chunks;
    pt.n_chunks = (pt.n_out + pt.plan->row_chunk - 1) / pt.plan->row_chunk;
    job.total_chunks += pt.n_chunks;
    job.macs += t.n_tokens * pt.n_in * pt.n_out;
    if (pt.plan->pack_rows) {
      job.panel_bytes = std::max(job.panel_bytes, pt.plan->panel_row_bytes(pt.n_in) * pt.plan->row_chunk);
    }
    // Parts that read the same rows of x and convert them the same way share
    // one activation copy (Q/K/V, gate/up, Q4_K and Q6_K weights alike).
    int64_t off = -1;
    for (size_t j = 0; j < parts.size() && off < 0; ++j) {
      const Part& o = parts[j];
      if (xs[j] == t.x && o.n_in == pt.n_in && o.n_tokens == pt.n_tokens &&
          o.plan->convert_act == pt.plan->convert_act) {
        off = act_offset[j];
      }
    }
    converts.push_back(off < 0);
    if (off < 0) {
      off = act_bytes;
      act_bytes += pt.act_stride * pt.n_tokens;
      convert_elems += pt.n_tokens * pt.n_in;
    }
    act_offset.push_back(off);
    parts.push_back(pt);
    xs.push_back(t.x);
  }
  if (parts.empty()) return;
  uint8_t* act = t_act_scratch.Get(static_cast<size_t>(act_bytes));
  for (size_t i = 0; i < parts.size(); ++i) parts[i].act = act + act_offset[i];
  const int nth = pool.size();
  auto convert_rows = [&](int ith, int n) {
    int64_t row = 0;  // rows of all converted parts, dealt round-robin
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!converts[i]) continue;
      const Part& pt = parts[i];
      uint8_t* dst = act + act_offset[i];
      for (int64_t t = 0; t < pt.n_tokens; ++t, ++row) {
        if (row % n == ith) pt.plan->convert_act(xs[i] + t * pt.n_in, pt.n_in, dst + t * pt.act_stride);
      }
    }
  };
  if (convert_elems >= kParallelConvertElems && nth > 1) {
    pool.Run(convert_rows);
  } else {
    convert_rows(0, 1);
  }

  job.parts = parts.data();
  job.grain_div = 2 * nth;
  if (nth > 1 && job.total_chunks > 1 && job.macs >= kMinParallelMacs) {
    // Captures one reference, so std::function stores it without allocating.
    pool.Run([&job](int, int) { job.Work(); });
  } else {
    job.Work();
  }
}

void MatMulShared(std::span<const MatMulTarget> targets, const float* x, int64_t n_tokens, ThreadPool& pool) {
  if (n_tokens <= 0 || targets.empty()) return;
  PAGODA_CHECK(targets.size() <= static_cast<size_t>(kMaxMatMulTargets)) << "too many MatMul targets";
  MatMulGroupTarget g[kMaxMatMulTargets];
  for (size_t i = 0; i < targets.size(); ++i) {
    PAGODA_CHECK(targets[i].w->ne[0] == targets[0].w->ne[0])
        << "MatMulShared: " << targets[i].w->name << " has a different input width";
    g[i] = MatMulGroupTarget{targets[i].w, x, n_tokens, targets[i].y};
  }
  MatMulGrouped(std::span<const MatMulGroupTarget>(g, targets.size()), pool);
}

void MatMul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  const MatMulTarget t{&w, y};
  MatMulShared(std::span<const MatMulTarget>(&t, 1), x, n_tokens, pool);
}

}  // namespace pagoda::kernels
