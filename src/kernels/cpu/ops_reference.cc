// Scalar reference twins of ops.h: plain loops, double accumulation, libm.
// They define what the fast ops compute; tests compare against them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/kv_quant.h"
#include "kernels/cpu/ops.h"
#include "tensor/fp16.h"

namespace pagoda::kernels {

void RmsNormReference(const float* x, const float* w, float eps, int64_t n_rows, int64_t n,
                      float* y) {
  for (int64_t r = 0; r < n_rows; ++r) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[r * n + i]) * x[r * n + i];
    const double scale = 1.0 / std::sqrt(sum / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      y[r * n + i] = static_cast<float>(x[r * n + i] * scale * (w != nullptr ? w[i] : 1.0));
    }
  }
}

void LayerNormReference(const float* x, const float* w, const float* b, float eps, int64_t n_rows,
                        int64_t n, float* y) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    double mean = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += xr[i];
    mean /= static_cast<double>(n);
    double var = 0.0;
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(n);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
      const double v = (xr[i] - mean) * inv * (w != nullptr ? w[i] : 1.0) + (b != nullptr ? b[i] : 0.0);
      y[r * n + i] = static_cast<float>(v);
    }
  }
}

void RopeReference(float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim,
                   int n_rot, bool neox, const int32_t* pos, double base, double freq_scale,
                   const float* freq_factors) {
  const int n_half = n_rot / 2;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
      for (int i = 0; i < n_half; ++i) {
        double theta = pos[t] * freq_scale * std::pow(base, -2.0 * i / n_rot);
        if (freq_factors != nullptr) theta /= freq_factors[i];
        const int i0 = neox ? i : 2 * i;
        const int i1 = neox ? i + n_half : 2 * i + 1;
        const double x0 = v[i0];
        const double x1 = v[i1];
        v[i0] = static_cast<float>(x0 * std::cos(theta) - x1 * std::sin(theta));
        v[i1] = static_cast<float>(x0 * std::sin(theta) + x1 * std::cos(theta));
      }
    }
  }
}

void SoftmaxReference(float* x, int64_t n) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::exp(x[i] - mx) / sum);
}

void SiluMulReference(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void GeluReference(const float* x, int64_t n, float* out) {
  // 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)): the same function without the
  // cancellation of 1 + tanh(u) for negative u (which loses all digits near
  // x = -7 even in double).
  const double k = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out[i] = static_cast<float>(v / (1.0 + std::exp(-2.0 * k * (v + 0.044715 * v * v * v))));
  }
}

void BidirectionalAttentionReference(const AttentionShape& sh, const float* q, int64_t q_stride,
                                     const float* k, int64_t k_stride, const float* v, int64_t v_stride,
                                     const DenseSeq* seqs, int n_seqs, float* out, int64_t out_stride) {
  const int ratio = sh.n_head / sh.n_head_kv;
  std::vector<double> p;
  for (int s = 0; s < n_seqs; ++s) {
    const DenseSeq& seq = seqs[s];
    p.assign(seq.n_rows, 0.0);
    for (int32_t i = 0; i < seq.n_rows; ++i) {
      for (int h = 0; h < sh.n_head; ++h) {
        const int g = h / ratio;
        const float* qh = q + seq.rows[i] * q_stride + static_cast<int64_t>(h) * sh.head_dim_k;
        double mx = -std::numeric_limits<double>::infinity();
        for (int32_t j = 0; j < seq.n_rows; ++j) {
          const float* kh = k + seq.rows[j] * k_stride + static_cast<int64_t>(g) * sh.head_dim_k;
          double dot = 0.0;
          for (int d = 0; d < sh.head_dim_k; ++d) dot += static_cast<double>(qh[d]) * kh[d];
          p[j] = dot * sh.scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0.0;
        for (int32_t j = 0; j < seq.n_rows; ++j) sum += (p[j] = std::exp(p[j] - mx));
        float* o = out + seq.rows[i] * out_stride + static_cast<int64_t>(h) * sh.head_dim_v;
        for (int d = 0; d < sh.head_dim_v; ++d) {
          double acc = 0.0;
          for (int32_t j = 0; j < seq.n_rows; ++j) {
            acc += p[j] * v[seq.rows[j] * v_stride + static_cast<int64_t>(g) * sh.head_dim_v + d];
          }
          o[d] = static_cast<float>(acc / sum);
        }
      }
    }
  }
}

namespace {

// Element d of K (is_k) or V of the head at (pos, head) as a double: the
// cached element decoded through tensor/fp16.h and kv_quant.h's scalar codecs
// (the scale as 2^(byte - 127), by ldexp), independent of the kernels' conversions.
double KvAt(const KvView& kv, bool is_k, int32_t pos, int head, int d) {
  const int64_t pos_stride = is_k ? kv.k_pos_stride : kv.v_pos_stride;
  const int64_t head_stride = is_k ? kv.k_head_stride : kv.v_head_stride;
  const int64_t i = (pos % kv.block_size) * pos_stride + head * head_stride + d;
  const int32_t b = pos / kv.block_size;
  const void* block = (is_k ? kv.k_blocks : kv.v_blocks)[b];
  switch (kv.type) {
    case KvType::kF32: return static_cast<const float*>(block)[i];
    case KvType::kF16: return F16ToF32(static_cast<const uint16_t*>(block)[i]);
    case KvType::kBf16: return BF16ToF32(static_cast<const uint16_t*>(block)[i]);
    case KvType::kFp8E4M3:
    case KvType::kInt8: {
      const uint8_t e = (is_k ? kv.k_scales : kv.v_scales)[b][head * kv.block_size + pos % kv.block_size];
      const double scale = e == 0 ? 0.0 : std::ldexp(1.0, e - 127);
      const uint8_t c = static_cast<const uint8_t*>(block)[i];
      const double x = kv.type == KvType::kFp8E4M3 ? Fp8E4M3ToFloat(c) : static_cast<int8_t>(c);
      return x * scale;
    }
  }
  return 0.0;
}

double RoundToF16(double x) { return F16ToF32(F32ToF16(static_cast<float>(x))); }

}  // namespace

// With an f16 cache, q and the normalised weights are rounded to f16 as the
// fast path does (see ops.h); everything else in double.
void AttentionReference(const AttentionShape& sh, const float* q, int64_t q_stride,
                        const int32_t* positions, const AttentionSeq* seqs, int n_seqs,
                        float* out, int64_t out_stride) {
  const int ratio = sh.n_head / sh.n_head_kv;
  std::vector<double> scores;
  std::vector<double> acc(sh.head_dim_v);
  std::vector<double> qd(sh.head_dim_k);
  for (int si = 0; si < n_seqs; ++si) {
    const AttentionSeq& seq = seqs[si];
    const KvView& kv = seq.kv;
    const bool f16 = kv.type == KvType::kF16;
    for (int32_t ri = 0; ri < seq.n_rows; ++ri) {
      const int32_t row = seq.rows[ri];
      const int32_t p = positions[row];
      scores.assign(p + 1, 0.0);
      for (int h = 0; h < sh.n_head; ++h) {
        const int g = h / ratio;
        const float* qh = q + row * q_stride + static_cast<int64_t>(h) * sh.head_dim_k;
        for (int d = 0; d < sh.head_dim_k; ++d) qd[d] = f16 ? RoundToF16(qh[d]) : qh[d];
        double mx = -std::numeric_limits<double>::infinity();
        for (int32_t j = 0; j <= p; ++j) {
          double s = 0.0;
          for (int d = 0; d < sh.head_dim_k; ++d) {
            s += qd[d] * KvAt(kv, true, j, g, d);
          }
          scores[j] = s * sh.scale;
          mx = std::max(mx, scores[j]);
        }
        double sum = 0.0;
        for (int32_t j = 0; j <= p; ++j) sum += (scores[j] = std::exp(scores[j] - mx));
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int32_t j = 0; j <= p; ++j) {
          const double w = f16 ? RoundToF16(scores[j] / sum) : scores[j] / sum;
          for (int d = 0; d < sh.head_dim_v; ++d) {
            acc[d] += w * KvAt(kv, false, j, g, d);
          }
        }
        float* o = out + row * out_stride + static_cast<int64_t>(h) * sh.head_dim_v;
        for (int d = 0; d < sh.head_dim_v; ++d) o[d] = static_cast<float>(acc[d]);
      }
    }
  }
}

}  // namespace pagoda::kernels
