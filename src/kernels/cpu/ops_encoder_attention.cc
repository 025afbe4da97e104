// BidirectionalAttention (ops.h): unmasked multi-head attention within whole
// sequences, for encoders. One task per (sequence, head); a task's result
// depends on its own rows alone, in a fixed order, so batching and threading
// never change a bit of it.
#include <algorithm>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/ops_math.h"

namespace pagoda::kernels {
namespace {

// Eight float partial sums (they vectorize), combined in a fixed order.
float Dot(const float* a, const float* b, int n) {
  float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int d = 0;
  for (; d + 8 <= n; d += 8) {
    for (int l = 0; l < 8; ++l) part[l] += a[d + l] * b[d + l];
  }
  float tail = 0.0f;
  for (; d < n; ++d) tail += a[d] * b[d];
  return ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7])) + tail;
}

struct Operands {
  const AttentionShape& sh;
  const float* q;
  int64_t q_stride;
  const float* k;
  int64_t k_stride;
  const float* v;
  int64_t v_stride;
  float* out;
  int64_t out_stride;
};

// Head h of every query of `seq`; p is scratch of seq.n_rows floats.
void AttendHead(const Operands& o, const DenseSeq& seq, int h, float* p) {
  const AttentionShape& sh = o.sh;
  const int g = h / (sh.n_head / sh.n_head_kv);
  const int64_t k_off = static_cast<int64_t>(g) * sh.head_dim_k;
  const int64_t v_off = static_cast<int64_t>(g) * sh.head_dim_v;
  for (int32_t i = 0; i < seq.n_rows; ++i) {
    const float* qh = o.q + seq.rows[i] * o.q_stride + static_cast<int64_t>(h) * sh.head_dim_k;
    float mx = -3.4e38f;
    for (int32_t j = 0; j < seq.n_rows; ++j) {
      p[j] = Dot(qh, o.k + seq.rows[j] * o.k_stride + k_off, sh.head_dim_k) * sh.scale;
      mx = std::max(mx, p[j]);
    }
    float sum = 0.0f;
    for (int32_t j = 0; j < seq.n_rows; ++j) {
      p[j] = internal::ExpApprox(p[j] - mx);
      sum += p[j];
    }
    const float inv = 1.0f / sum;
    float* oh = o.out + seq.rows[i] * o.out_stride + static_cast<int64_t>(h) * sh.head_dim_v;
    std::fill(oh, oh + sh.head_dim_v, 0.0f);
    for (int32_t j = 0; j < seq.n_rows; ++j) {
      const float w = p[j] * inv;
      const float* vh = o.v + seq.rows[j] * o.v_stride + v_off;
      for (int d = 0; d < sh.head_dim_v; ++d) oh[d] += w * vh[d];
    }
  }
}

}  // namespace

void BidirectionalAttention(const AttentionShape& sh, const float* q, int64_t q_stride, const float* k,
                            int64_t k_stride, const float* v, int64_t v_stride, const DenseSeq* seqs,
                            int n_seqs, float* out, int64_t out_stride, ThreadPool& pool) {
  PAGODA_CHECK(sh.n_head > 0 && sh.n_head_kv > 0 && sh.n_head % sh.n_head_kv == 0);
  PAGODA_CHECK(sh.head_dim_k > 0 && sh.head_dim_v > 0);
  const Operands o{sh, q, q_stride, k, k_stride, v, v_stride, out, out_stride};
  const int64_t n_tasks = static_cast<int64_t>(n_seqs) * sh.n_head;
  pool.Run([&](int ith, int nth) {
    // Grows once per thread to the longest sequence seen.
    thread_local std::vector<float> p;
    for (int64_t t = ith; t < n_tasks; t += nth) {
      const DenseSeq& seq = seqs[t / sh.n_head];
      if (seq.n_rows == 0) continue;
      if (p.size() < static_cast<size_t>(seq.n_rows)) p.resize(seq.n_rows);
      AttendHead(o, seq, static_cast<int>(t % sh.n_head), p.data());
    }
  });
}

}  // namespace pagoda::kernels
