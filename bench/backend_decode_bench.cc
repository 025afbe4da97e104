// backend_decode_bench: a Llama-shaped decode step (and a prefill chunk)
// composed of Backend ops on random weights, timed on one backend, against
// the device copy bandwidth measured in the same run. Prints a table.
//
//   backend_decode_bench --device cuda:0                 # 8B shape (issue 18's "Fast when")
//   backend_decode_bench --device cpu --shape tiny       # smoke test of the program itself
//
// Per step: per layer RMSNorm, Q/K/V, RoPE, KV store, paged attention (f16 KV,
// each stream with its own blocks), O, residual, RMSNorm, gate/up, SiLU*up,
// down, residual; then the final norm, the LM head and an on-device argmax.
// The bound: bytes one step must read (every weight once, every stream's KV)
// over the copy bandwidth (read + write bytes of a device-to-device copy).
// Random weights are generated block by block with sane scales, uploaded once
// per layer (distinct buffers, so every layer is a real read).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "tensor/blocks.h"
#include "tensor/dtype.h"
#include "tensor/fp16.h"

namespace pagoda::kernels {
namespace {

struct ModelShape {
  int64_t dim, n_layer, n_head, n_head_kv, head_dim, ffn, vocab;
  int64_t q_width() const { return n_head * head_dim; }
  int64_t kv_width() const { return n_head_kv * head_dim; }
};
constexpr ModelShape kLlama8B{4096, 32, 32, 8, 128, 14336, 128256};
constexpr ModelShape kTiny{256, 2, 4, 2, 64, 512, 1000};
constexpr int32_t kBlockSize = 16;

#define CHECK_OK(expr)                                                                      \
  do {                                                                                      \
    const ::pagoda::Status st_ = (expr);                                                    \
    if (!st_.ok()) {                                                                        \
      std::fprintf(stderr, "backend_decode_bench: %s: %s\n", #expr, st_.message().c_str()); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

template <class T>
T Take(Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "backend_decode_bench: %s: %s\n", what, r.status().message().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

uint64_t Next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// Random bytes of `rows` rows of `type`, with every scale a sane f16 and
// dense elements in about [-0.06, 0.06].
std::vector<uint8_t> RandomWeight(DType type, int64_t rows, int64_t n_in, uint64_t seed) {
  std::vector<uint8_t> b(static_cast<size_t>(RowBytes(type, n_in) * rows));
  uint64_t s = seed | 1;
  for (size_t i = 0; i + 8 <= b.size(); i += 8) {
    const uint64_t v = Next(s);
    std::memcpy(&b[i], &v, 8);
  }
  const Half scale = F32ToF16(0.004f);
  auto set_half = [&](size_t at) { std::memcpy(&b[at], &scale, 2); };
  const DTypeInfo& info = GetDTypeInfo(type);
  const size_t n_blocks = b.size() / static_cast<size_t>(info.type_size);
  for (size_t k = 0; k < n_blocks; ++k) {
    const size_t at = k * static_cast<size_t>(info.type_size);
    switch (type) {
      case DType::kQ4_0: case DType::kQ8_0: set_half(at); break;
      case DType::kQ4_K: set_half(at); set_half(at + 2); break;
      case DType::kQ6_K: set_half(at + offsetof(BlockQ6_K, d)); break;
      case DType::kBF16: case DType::kF16: {
        uint16_t v;
        std::memcpy(&v, &b[at], 2);
        const float f = (static_cast<float>(v & 0x3ff) / 1024.0f - 0.5f) * 0.12f;
        v = type == DType::kBF16 ? F32ToBF16(f) : F32ToF16(f);
        std::memcpy(&b[at], &v, 2);
        break;
      }
      default: break;
    }
  }
  return b;
}

struct Layer {
  DeviceBuffer wq, wk, wv, wo, gate, up, down, attn_norm, ffn_norm, k_pool, v_pool;
};

class DecodeBench {
 public:
  DecodeBench(Backend& b, const ModelShape& m, DType type, int64_t n_streams, int32_t ctx, int64_t max_prefill)
      : b_(b), s_(b.default_stream()), m_(m), type_(type), n_streams_(n_streams), ctx_(ctx),
        max_prefill_(max_prefill) {}

  void Setup();
  // One step of n_rows rows (decode: one per stream; prefill: n_rows positions of stream 0).
  void Step(int64_t n_rows, bool prefill);
  int64_t weight_bytes() const { return weight_bytes_; }
  int64_t kv_bytes_per_step() const {
    return n_streams_ * (ctx_ + 1) * m_.kv_width() * 2 /*K,V*/ * 2 /*f16*/ * m_.n_layer;
  }

 private:
  DeviceBuffer Upload(const std::vector<uint8_t>& bytes);
  DeviceBuffer Floats(int64_t n) { return Take(b_.Allocate(n * 4), "allocate"); }
  DeviceMatrix Mat(const DeviceBuffer& buf, int64_t n_in, int64_t n_out) const {
    return DeviceMatrix{type_, n_in, n_out, buf.data()};
  }
  void Layer(const Layer& l, int64_t n_rows);

  Backend& b_;
  Stream& s_;
  ModelShape m_;
  DType type_;
  int64_t n_streams_;
  int32_t ctx_;
  int64_t max_prefill_;
  int32_t blocks_per_stream_ = 0;
  int64_t weight_bytes_ = 0;
  std::vector<struct Layer> layers_;
  DeviceBuffer output_, out_norm_, x_, xn_, q_, k_, v_, att_, y_, g_, u_, logits_, top_v_, top_i_;
  DeviceBuffer inv_freq_, pos_, seq_, tables_, cos_, sin_;
  KvPoolView pool_{};
  PagedBatch batch_{};
  int64_t max_rows_ = 0;
};

DeviceBuffer DecodeBench::Upload(const std::vector<uint8_t>& bytes) {
  DeviceBuffer d = Take(b_.Allocate(static_cast<int64_t>(bytes.size())), "allocate weights");
  CHECK_OK(b_.CopyToDevice(s_, bytes.data(), d.data(), static_cast<int64_t>(bytes.size())));
  CHECK_OK(s_.Synchronize());
  return d;
}

void DecodeBench::Setup() {
  const int64_t d = m_.dim;
  const auto wq = RandomWeight(type_, m_.q_width(), d, 1), wk = RandomWeight(type_, m_.kv_width(), d, 2),
             wv = RandomWeight(type_, m_.kv_width(), d, 3), wo = RandomWeight(type_, d, m_.q_width(), 4),
             gate = RandomWeight(type_, m_.ffn, d, 5), up = RandomWeight(type_, m_.ffn, d, 6),
             down = RandomWeight(type_, d, m_.ffn, 7);
  std::vector<float> ones(d, 1.0f);
  std::vector<uint8_t> norm(d * 4);
  std::memcpy(norm.data(), ones.data(), norm.size());
  blocks_per_stream_ = static_cast<int32_t>((std::max<int64_t>(ctx_ + 1, max_prefill_) + kBlockSize - 1) / kBlockSize);
  const int32_t n_blocks = static_cast<int32_t>(n_streams_) * blocks_per_stream_;
  const int64_t pool_bytes = int64_t{n_blocks} * kBlockSize * m_.kv_width() * 2;
  // A chunk of random f16 K/V, replicated over every pool on the device.
  std::vector<uint8_t> chunk = RandomWeight(DType::kF16, 1, 1 << 22, 8);
  for (int64_t i = 0; i < m_.n_layer; ++i) {
    struct Layer l{Upload(wq), Upload(wk), Upload(wv), Upload(wo), Upload(gate), Upload(up), Upload(down),
                   Upload(norm), Upload(norm), Take(b_.Allocate(pool_bytes), "allocate K pool"),
                   Take(b_.Allocate(pool_bytes), "allocate V pool")};
    DeviceBuffer src = Upload(chunk);
    for (DeviceBuffer* p : {&l.k_pool, &l.v_pool}) {
      for (int64_t at = 0; at < pool_bytes; at += static_cast<int64_t>(chunk.size())) {
        const int64_t n = std::min<int64_t>(static_cast<int64_t>(chunk.size()), pool_bytes - at);
        CHECK_OK(b_.CopyOnDevice(s_, src.data(), static_cast<uint8_t*>(p->data()) + at, n));
      }
    }
    CHECK_OK(s_.Synchronize());
    layers_.push_back(std::move(l));
  }
  weight_bytes_ = m_.n_layer * static_cast<int64_t>(wq.size() + wk.size() + wv.size() + wo.size() + gate.size() +
                                                    up.size() + down.size());
  output_ = Upload(RandomWeight(type_, m_.vocab, d, 9));
  weight_bytes_ += output_.bytes();
  out_norm_ = Upload(norm);

  max_rows_ = std::max<int64_t>(n_streams_, max_prefill_);
  for (DeviceBuffer* f : {&x_, &xn_, &y_}) *f = Floats(max_rows_ * d);
  q_ = Floats(max_rows_ * m_.q_width());
  att_ = Floats(max_rows_ * m_.q_width());
  k_ = Floats(max_rows_ * m_.kv_width());
  v_ = Floats(max_rows_ * m_.kv_width());
  g_ = Floats(max_rows_ * m_.ffn);
  u_ = Floats(max_rows_ * m_.ffn);
  logits_ = Floats(n_streams_ * m_.vocab);
  top_v_ = Floats(n_streams_);
  top_i_ = Floats(n_streams_);
  cos_ = Floats(max_rows_ * m_.head_dim / 2);
  sin_ = Floats(max_rows_ * m_.head_dim / 2);
  std::vector<float> x(max_rows_ * d);
  uint64_t s = 77;
  for (float& v : x) v = static_cast<float>(Next(s) % 2001) / 1000.0f - 1.0f;
  CHECK_OK(b_.CopyToDevice(s_, x.data(), x_.data(), x_.bytes()));
  std::vector<double> inv_freq(m_.head_dim / 2);
  RopeInvFreq(500000.0, static_cast<int>(m_.head_dim), 1.0, nullptr, inv_freq.data());
  std::vector<uint8_t> f(inv_freq.size() * sizeof(double));
  std::memcpy(f.data(), inv_freq.data(), f.size());
  inv_freq_ = Upload(f);
  std::vector<int32_t> tables(n_blocks);
  for (int32_t i = 0; i < n_blocks; ++i) tables[i] = i;
  std::vector<uint8_t> tb(tables.size() * 4);
  std::memcpy(tb.data(), tables.data(), tb.size());
  tables_ = Upload(tb);
  pos_ = Take(b_.Allocate(max_rows_ * 4), "allocate");
  seq_ = Take(b_.Allocate(max_rows_ * 4), "allocate");
  CHECK_OK(s_.Synchronize());
  pool_ = KvPoolView{KvType::kF16, n_blocks, kBlockSize, static_cast<int>(m_.n_head_kv), static_cast<int>(m_.head_dim),
                     static_cast<int>(m_.head_dim), nullptr, nullptr, nullptr, nullptr};
}

void DecodeBench::Layer(const struct Layer& l, int64_t n) {
  const int64_t d = m_.dim, qw = m_.q_width(), kw = m_.kv_width();
  float* x = x_.as<float>();
  float* xn = xn_.as<float>();
  float* y = y_.as<float>();
  CHECK_OK(b_.RmsNorm(s_, x, l.attn_norm.as<float>(), 1e-5f, n, d, xn));
  CHECK_OK(b_.MatMul(s_, Mat(l.wq, d, qw), xn, n, q_.as<float>()));
  CHECK_OK(b_.MatMul(s_, Mat(l.wk, d, kw), xn, n, k_.as<float>()));
  CHECK_OK(b_.MatMul(s_, Mat(l.wv, d, kw), xn, n, v_.as<float>()));
  const int hd = static_cast<int>(m_.head_dim);
  CHECK_OK(b_.Rope(s_, q_.as<float>(), n, qw, static_cast<int>(m_.n_head), hd, hd, false, cos_.as<float>(),
                   sin_.as<float>()));
  CHECK_OK(b_.Rope(s_, k_.as<float>(), n, kw, static_cast<int>(m_.n_head_kv), hd, hd, false, cos_.as<float>(),
                   sin_.as<float>()));
  KvPoolView pool = pool_;
  pool.k = l.k_pool.data();
  pool.v = l.v_pool.data();
  CHECK_OK(b_.StoreKv(s_, pool, batch_, k_.as<float>(), kw, v_.as<float>(), kw));
  const AttentionShape sh{static_cast<int>(m_.n_head), static_cast<int>(m_.n_head_kv), hd, hd,
                          1.0f / std::sqrt(static_cast<float>(hd))};
  CHECK_OK(b_.PagedAttention(s_, sh, pool, batch_, q_.as<float>(), qw, att_.as<float>(), qw));
  CHECK_OK(b_.MatMul(s_, Mat(l.wo, qw, d), att_.as<float>(), n, y));
  CHECK_OK(b_.Add(s_, x, y, n * d, x));
  CHECK_OK(b_.RmsNorm(s_, x, l.ffn_norm.as<float>(), 1e-5f, n, d, xn));
  CHECK_OK(b_.MatMul(s_, Mat(l.gate, d, m_.ffn), xn, n, g_.as<float>()));
  CHECK_OK(b_.MatMul(s_, Mat(l.up, d, m_.ffn), xn, n, u_.as<float>()));
  CHECK_OK(b_.SiluMul(s_, g_.as<float>(), u_.as<float>(), n * m_.ffn, g_.as<float>()));
  CHECK_OK(b_.MatMul(s_, Mat(l.down, m_.ffn, d), g_.as<float>(), n, y));
  CHECK_OK(b_.Add(s_, x, y, n * d, x));
}

void DecodeBench::Step(int64_t n, bool prefill) {
  // Rows: decode, one per stream at position ctx; prefill, positions 0..n-1 of stream 0.
  std::vector<int32_t> pos(n), seq(n);
  for (int64_t r = 0; r < n; ++r) {
    pos[r] = prefill ? static_cast<int32_t>(r) : ctx_;
    seq[r] = prefill ? 0 : static_cast<int32_t>(r);
  }
  CHECK_OK(b_.CopyToDevice(s_, pos.data(), pos_.data(), n * 4));
  CHECK_OK(b_.CopyToDevice(s_, seq.data(), seq_.data(), n * 4));
  batch_ = PagedBatch{n, pos_.as<int32_t>(), seq_.as<int32_t>(), tables_.as<int32_t>(),
                      static_cast<int32_t>(n_streams_), blocks_per_stream_};
  CHECK_OK(b_.RopeTables(s_, inv_freq_.as<double>(), static_cast<int>(m_.head_dim / 2), pos_.as<int32_t>(), n,
                         cos_.as<float>(), sin_.as<float>()));
  for (const struct Layer& l : layers_) Layer(l, n);
  // Logits only for the rows sampling needs: every decode row, the last prefill row.
  const int64_t first = prefill ? n - 1 : 0, n_out = prefill ? 1 : n;
  float* xn = xn_.as<float>() + first * m_.dim;
  CHECK_OK(b_.RmsNorm(s_, x_.as<float>() + first * m_.dim, out_norm_.as<float>(), 1e-5f, n_out, m_.dim, xn));
  CHECK_OK(b_.MatMul(s_, Mat(output_, m_.dim, m_.vocab), xn, n_out, logits_.as<float>()));
  CHECK_OK(b_.TopK(s_, logits_.as<float>(), n_out, m_.vocab, 1, top_v_.as<float>(), top_i_.as<int32_t>()));
  CHECK_OK(s_.Synchronize());
}

double Seconds(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class F>
double MedianSeconds(int reps, F&& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(Seconds(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Device-to-device copy of `bytes`: read + write bytes per second.
double CopyBandwidth(Backend& b, int64_t bytes, int reps) {
  DeviceBuffer src = Take(b.Allocate(bytes), "allocate copy source"), dst = Take(b.Allocate(bytes), "allocate copy");
  Stream& s = b.default_stream();
  const double sec = MedianSeconds(reps, [&] {
    CHECK_OK(b.CopyOnDevice(s, src.data(), dst.data(), bytes));
    CHECK_OK(s.Synchronize());
  });
  return 2.0 * static_cast<double>(bytes) / sec;
}

struct Options {
  std::string device = "cuda:0";
  std::string shape = "8b";
  int32_t ctx = 512;
  int64_t streams = 64;
  int64_t prefill = 2048;
  int reps = 10;
  double matrix_tflops = 0;  // the bf16 matrix rate measured beside this run (0: unknown)
};

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v == nullptr) return false;
    if (a == "--device") o->device = v;
    else if (a == "--shape") o->shape = v;
    else if (a == "--ctx") o->ctx = std::atoi(v);
    else if (a == "--streams") o->streams = std::atoll(v);
    else if (a == "--prefill") o->prefill = std::atoll(v);
    else if (a == "--reps") o->reps = std::atoi(v);
    else if (a == "--matrix-tflops") o->matrix_tflops = std::atof(v);
    else return false;
    ++i;
  }
  return (o->shape == "8b" || o->shape == "tiny") && o->ctx > 0 && o->streams > 0 && o->prefill > 0 && o->reps > 0;
}

struct DecodeRow {
  double step_s = 0, bytes = 0;
};

DecodeRow Decode(Backend& b, const ModelShape& m, DType type, int64_t streams, const Options& o) {
  DecodeBench bench(b, m, type, streams, o.ctx, /*max_prefill=*/1);
  bench.Setup();
  DecodeRow r;
  r.step_s = MedianSeconds(o.reps, [&] { bench.Step(streams, /*prefill=*/false); });
  r.bytes = static_cast<double>(bench.weight_bytes() + bench.kv_bytes_per_step());
  return r;
}

int Main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr, "usage: backend_decode_bench [--device cpu|cuda[:N]] [--shape 8b|tiny] [--ctx N] "
                         "[--streams N] [--prefill N] [--reps N] [--matrix-tflops X]\n");
    return 2;
  }
  const ModelShape m = o.shape == "8b" ? kLlama8B : kTiny;
  const DeviceSpec spec = Take(ParseDeviceSpec(o.device), "--device");
  ThreadPool pool(DefaultThreadCount());
  std::unique_ptr<Backend> backend = Take(MakeBackend(spec, pool), "open the backend");
  std::printf("backend_decode_bench on %s, shape %s (dim %lld, %lld layers, %lld/%lld heads, ffn %lld, vocab %lld), "
              "f16 KV at context %d, median of %d\n",
              backend->name().c_str(), o.shape.c_str(), static_cast<long long>(m.dim),
              static_cast<long long>(m.n_layer), static_cast<long long>(m.n_head), static_cast<long long>(m.n_head_kv),
              static_cast<long long>(m.ffn), static_cast<long long>(m.vocab), o.ctx, o.reps);
  const double copy_bw = CopyBandwidth(*backend, o.shape == "8b" ? (int64_t{2} << 30) : (int64_t{64} << 20), o.reps);
  std::printf("%-34s %10s %12s %12s %10s %10s\n", "case", "ms/step", "tokens/s", "GB/step", "GB/s", "of copy");
  std::printf("%-34s %10s %12s %12s %10.1f %10s\n", "device copy (read+write)", "-", "-", "-", copy_bw / 1e9, "1.00");
  double q4_single = 0;
  for (DType type : {DType::kQ4_0, DType::kBF16}) {
    const DecodeRow r = Decode(*backend, m, type, 1, o);
    if (type == DType::kQ4_0) q4_single = 1.0 / r.step_s;
    std::printf("%-34s %10.3f %12.1f %12.3f %10.1f %10.2f   (target >= 0.70)\n",
                (std::string("decode 1 stream ") + DTypeName(type)).c_str(), r.step_s * 1e3, 1.0 / r.step_s,
                r.bytes / 1e9, r.bytes / r.step_s / 1e9, r.bytes / r.step_s / copy_bw);
  }
  {
    const DecodeRow r = Decode(*backend, m, DType::kQ4_0, o.streams, o);
    const double tps = static_cast<double>(o.streams) / r.step_s;
    std::printf("%-34s %10.3f %12.1f %12.3f %10.1f %10.2f   (%.1fx one stream; target >= 20x)\n",
                ("decode " + std::to_string(o.streams) + " streams Q4_0").c_str(), r.step_s * 1e3, tps, r.bytes / 1e9,
                r.bytes / r.step_s / 1e9, r.bytes / r.step_s / copy_bw, tps / q4_single);
  }
  {
    DecodeBench bench(*backend, m, DType::kBF16, 1, o.ctx, o.prefill);
    bench.Setup();
    const double sec = MedianSeconds(std::max(1, o.reps / 3), [&] { bench.Step(o.prefill, /*prefill=*/true); });
    // 2 FLOP per weight per token (the LM head once); attention adds little at this length.
    const double params = static_cast<double>(bench.weight_bytes()) / 2.0;
    const double tflops = 2.0 * (params - static_cast<double>(m.vocab * m.dim)) * static_cast<double>(o.prefill) / sec / 1e12;
    std::printf("%-34s %10.1f %12.1f %12s %10s %10s   %.1f TFLOP/s", ("prefill " + std::to_string(o.prefill) + " BF16").c_str(),
                sec * 1e3, static_cast<double>(o.prefill) / sec, "-", "-", "-", tflops);
    if (o.matrix_tflops > 0) std::printf(" = %.3f of the %.0f TFLOP/s bf16 matrix rate (target >= 0.50)", tflops / o.matrix_tflops, o.matrix_tflops);
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace pagoda::kernels

int main(int argc, char** argv) { return pagoda::kernels::Main(argc, argv); }
