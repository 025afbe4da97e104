#include "kernels/cpu/ops.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops_elementwise.h"
#include "kernels/cpu/ops_math.h"

namespace pagoda::kernels {

using internal::ExpApprox;
using internal::GeluApprox;
using internal::SiluApprox;

void RmsNorm(const float* x, const float* w, float eps, int64_t n_rows, int64_t n, float* y) {
  PAGODA_CHECK(n > 0 && n_rows >= 0);
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    // Eight float partial sums vectorize; double combines them (n <= ~16K).
    float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      for (int k = 0; k < 8; ++k) part[k] += xr[i + k] * xr[i + k];
    }
    double sum = 0.0;
    for (; i < n; ++i) sum += static_cast<double>(xr[i]) * xr[i];
    for (int k = 0; k < 8; ++k) sum += part[k];
    const float scale = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
    if (w != nullptr) {
      for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] * scale * w[j];
    } else {
      for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] * scale;
    }
  }
}

void LayerNorm(const float* x, const float* w, const float* b, float eps, int64_t n_rows, int64_t n,
               float* y) {
  PAGODA_CHECK(n > 0 && n_rows >= 0);
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    // Two passes (mean, then the centred squares) in double: no cancellation
    // when the mean is large against the spread.
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(n);
    double sq = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = xr[i] - mean;
      sq += d * d;
    }
    const float m = static_cast<float>(mean);
    const float scale = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + eps));
    for (int64_t j = 0; j < n; ++j) {
      float v = (xr[j] - m) * scale;
      if (w != nullptr) v *= w[j];
      if (b != nullptr) v += b[j];
      yr[j] = v;
    }
  }
}

void RopeInvFreq(double base, int n_rot, double freq_scale, const float* freq_factors,
                 double* inv_freq) {
  PAGODA_CHECK(n_rot > 0 && n_rot % 2 == 0 && base > 0.0);
  for (int i = 0; i < n_rot / 2; ++i) {
    double f = freq_scale * std::pow(base, -2.0 * i / n_rot);
    if (freq_factors != nullptr) f /= freq_factors[i];
    inv_freq[i] = f;
  }
}

void RopeYarnInvFreq(double base, int n_rot, double freq_scale, int64_t n_ctx_orig, double beta_fast,
                     double beta_slow, double* inv_freq) {
  PAGODA_CHECK(n_rot > 0 && n_rot % 2 == 0 && base > 0.0 && n_ctx_orig > 0);
  // ggml_rope_yarn_corr_dims: the dims whose wavelength fits beta rotations
  // in the original context.
  auto corr_dim = [&](double beta) {
    return n_rot * std::log(static_cast<double>(n_ctx_orig) / (beta * 2.0 * M_PI)) / (2.0 * std::log(base));
  };
  const double low = std::max(0.0, std::floor(corr_dim(beta_fast)));
  const double high = std::min(static_cast<double>(n_rot - 1), std::ceil(corr_dim(beta_slow)));
  for (int i = 0; i < n_rot / 2; ++i) {
    const double y = (i - low) / std::max(0.001, high - low);
    const double mix = 1.0 - std::min(1.0, std::max(0.0, y));  // 1: extrapolate (no scaling)
    inv_freq[i] = std::pow(base, -2.0 * i / n_rot) * (freq_scale * (1.0 - mix) + mix);
  }
}

void RopeTables(const double* inv_freq, int n_half, const int32_t* pos, int64_t n_tokens,
                float* cos, float* sin) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int i = 0; i < n_half; ++i) {
      // Angle in double: at position 1e5 a float angle would be off by ~1e-2 rad.
      const double theta = pos[t] * inv_freq[i];
      cos[t * n_half + i] = static_cast<float>(std::cos(theta));
      sin[t * n_half + i] = static_cast<float>(std::sin(theta));
    }
  }
}

void Rope(float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim, int n_rot,
          bool neox, const float* cos, const float* sin) {
  PAGODA_CHECK(n_rot > 0 && n_rot % 2 == 0 && n_rot <= head_dim);
  const int n_half = n_rot / 2;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* c = cos + t * n_half;
    const float* s = sin + t * n_half;
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
      if (neox) {
        float* a = v;
        float* b = v + n_half;
        for (int i = 0; i < n_half; ++i) {
          const float x0 = a[i];
          const float x1 = b[i];
          a[i] = x0 * c[i] - x1 * s[i];
          b[i] = x0 * s[i] + x1 * c[i];
        }
      } else {
        for (int i = 0; i < n_half; ++i) {
          const float x0 = v[2 * i];
          const float x1 = v[2 * i + 1];
          v[2 * i] = x0 * c[i] - x1 * s[i];
          v[2 * i + 1] = x0 * s[i] + x1 * c[i];
        }
      }
    }
  }
}

void Softmax(float* x, int64_t n) {
  PAGODA_CHECK(n >= 1);
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = ExpApprox(x[i] - mx);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void Gelu(const float* x, int64_t n, float* out) {
  if (ActiveIsa() == Isa::kAvx512) return internal::GeluAvx512(x, n, out);
  if (ActiveIsa() == Isa::kAvx2) return internal::GeluAvx2(x, n, out);
  for (int64_t i = 0; i < n; ++i) out[i] = GeluApprox(x[i]);
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  if (ActiveIsa() == Isa::kAvx512) return internal::SiluMulAvx512(gate, up, n, out);
  if (ActiveIsa() == Isa::kAvx2) return internal::SiluMulAvx2(gate, up, n, out);
  for (int64_t i = 0; i < n; ++i) out[i] = SiluApprox(gate[i]) * up[i];
}

}  // namespace pagoda::kernels
