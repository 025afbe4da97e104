// AVX2 int8 "small GEMM" for quantized weights (Q4_0, Q4_1, Q5_0, Q8_0), the
// AVX2 twin of matmul_int8_avx512.cc, for CPUs without AVX-512 (Zen 3).
//
// Activations: per 32-block Q8 (max-abs, d = amax / 127, |q| <= 127), stored
// per token as s8 qs[n_in], f32 d[nb], i32 sum[nb] (sum of q), f32 xs[nb]
// (d * sum), nb = n_in / 32. Error: activation rounding only,
// |dx| <= amax_blk / 254 (as the GEMV plans).
//
// Weights: each chunk of rows is unpacked once per call into an int8 panel
// that every token of the call reuses. Rows are taken 8 at a time (one i32
// lane of a ymm per row); per (8 rows, 32-block) the panel holds
//   Q4_0/Q4_1: 4 vectors, vector q = bytes [4q, 4q+4) of the 8 rows' qs
//              (nibbles: low = elements 4q.., high = 16+4q..), unsplit
//   Q5_0/Q8_0: 8 vectors, vector q = levels 4q..4q+3 of the 8 rows
//   f32 dw[8]: the block scale of each row; f32 mw[8]: Q4_1 min
// and a broadcast of 4 activation bytes times one level vector advances all
// 8 row sums at once (vpmaddubsw + vpmaddwd; no horizontal reduction).
// Register tile 2 groups x 2 tokens (Q8_0: 1 x 4); 32-row panels.
//
// Small batches do not pay for the panel (its per-call repack costs about a
// decode pass over the weights), so below Traits::kPanelMinTokens (8; Q8_0
// 32) a fused kernel reads the weight rows directly, 8 rows x up to 4
// tokens: Q4_0/Q4_1 pack each block into a stack buffer and run the panel's
// BlockStep on it; Q5_0/Q8_0 multiply each row in element order and reduce
// the 8 rows' partial sums with an hadd tree (no 8x8 transpose). Either way
// the integer block dots and the f32 fold are the panel's.
//
// vpmaddubsw multiplies u8 by s8 and adds pairs with i16 saturation, so the
// unsigned operand is always the weight level and the activations stay
// signed (never q + 128: 255 * 127 * 2 > 32767):
//   Q4_0/Q4_1: nibble u in [0, 15]; eight vpmaddubsw add up in i16 (16
//              products: 16 * 15 * 127 = 30480 < 32767), one vpmaddwd.
//   Q5_0:      u in [0, 31]; four add up in i16 (8 * 31 * 127 = 31496).
//   Q8_0:      the sign trick |w| x sign(a, w) (2 * 128 * 127 = 32512), one
//              vpmaddwd each.
// The level offsets (Q4_0 -8, Q5_0 -16) are taken off the integer sum as
// off * sum(q_x), so every kernel has the exact integer block dot
// isum = sum_k level_k * q_x,k.
//
// f32 arithmetic (Fold), the same for every kernel and tile position, so
// an output does not depend on n_tokens or the kernel, bitwise (the
// server's batch invariance; tests/kernels/matmul_int8_avx2_test.cc):
// per output, over blocks b in order,
//   acc = fma(float(isum_b), dw_b * dx_b, acc)        (acc starts at 0)
//   acc = fma(mw_b, xs_b, acc)                         (Q4_1 only)
// Explicit fma / mul intrinsics only, so -ffp-contract cannot change it.
// AVX-VNNI (vpdpbusd ymm) is not used: Zen 3 lacks it, and its u8 x s8
// operand order would need the activations offset (+128) as on AVX-512.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/int8_panel_avx2.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/matmul_tile_loop.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

// Activations (ActBytes, ConvertAct) and the shared transposes, loads and
// tile store: int8_panel_avx2.h.

// ---------------------------------------------------------------- types

template <DType kType>
struct Traits;

template <>
struct Traits<DType::kQ4_0> {
  using Block = BlockQ4_0;
  static constexpr bool kNib = true, kMin = false, kSigned = false;
  static constexpr int kOffset = 8, kQsAt = 2;
  static constexpr int kTileG = 1, kTileT = 4;  // panel register tile (groups x tokens): 1 x 4 over 2 x 2, x8 decode 1.14x (Zen 3)
  static constexpr int64_t kPanelMinTokens = 8;  // panel / fused: fused/panel 0.85x at 4, 1.0-1.15x at 8
};
template <>
struct Traits<DType::kQ4_1> {
  using Block = BlockQ4_1;
  static constexpr bool kNib = true, kMin = true, kSigned = false;
  static constexpr int kOffset = 0, kQsAt = 4;
  static constexpr int kTileG = 2, kTileT = 2;  // panel register tile (groups x tokens)
  static constexpr int64_t kPanelMinTokens = 8;  // panel / fused: 0.73x at 4, 1.13x at 8
};
template <>
struct Traits<DType::kQ5_0> {
  using Block = BlockQ5_0;
  static constexpr bool kNib = false, kMin = false, kSigned = false;
  static constexpr int kOffset = 16, kQsAt = 6;
  static constexpr int kTileG = 2, kTileT = 2;  // panel register tile (groups x tokens)
  static constexpr int64_t kPanelMinTokens = 8;  // panel / fused: 0.85x at 4, 1.26x at 8
};
template <>
struct Traits<DType::kQ8_0> {
  using Block = BlockQ8_0;
  static constexpr bool kNib = false, kMin = false, kSigned = true;
  static constexpr int kOffset = 0, kQsAt = 2;
  static constexpr int kTileG = 1, kTileT = 4;  // panel register tile (groups x tokens)
  static constexpr int64_t kPanelMinTokens = 32;  // panel / fused: 0.95x at 16, 1.0-1.14x at 32
};

// Bytes of one (8 rows, 32-block) of the panel.
template <class Tr>
struct Layout {
  static constexpr int kVecs = Tr::kNib ? 4 : 8;
  static constexpr int64_t kDw = 32 * kVecs, kMw = kDw + 32;
  static constexpr int64_t kBlockBytes = kDw + 32 + (Tr::kMin ? 32 : 0);
  static int64_t RowBytes(int64_t n_in) { return n_in / 32 * kBlockBytes / 8; }
};

// ---------------------------------------------------------------- packing

// Bits of a 32-bit mask -> 0x10 in the matching bytes (Q5_0's fifth bit).
inline __m256i HighBits(uint32_t qh) {
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                        3, 3, 3, 3, 3, 3);
  const __m256i bits = _mm256_set1_epi64x(0x8040201008040201ll);
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), shuf);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits), _mm256_set1_epi8(16));
}

// The 32 levels of one block in element order (Q5_0 unsigned, Q8_0 signed).
template <DType kType>
inline __m256i RowLevels(const uint8_t* p) {
  if constexpr (kType == DType::kQ8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
  } else {
    const auto* b = reinterpret_cast<const BlockQ5_0*>(p);
    uint32_t qh;
    std::memcpy(&qh, b->qh, 4);
    const __m128i v = Load16(b->qs);
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0F));
    return _mm256_or_si256(nib, HighBits(qh));
  }
}

// One (8 rows, block) of the panel at o from the blocks at p + r * ws.
template <DType kType>
inline void PackBlock(const uint8_t* p, int64_t ws, uint8_t* o) {
  using Tr = Traits<kType>;
  using L = Layout<Tr>;
  __m256i q[8];
  if constexpr (Tr::kNib) {
    __m256i v[4];
    for (int r = 0; r < 4; ++r) {
      v[r] = _mm256_set_m128i(Load16(p + (r + 4) * ws + Tr::kQsAt), Load16(p + r * ws + Tr::kQsAt));
    }
    Transpose4x2(v, q);
  } else {
    __m256i v[8];
    for (int r = 0; r < 8; ++r) v[r] = RowLevels<kType>(p + r * ws);
    Transpose8x8(v, q);
  }
  for (int i = 0; i < L::kVecs; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(o + 32 * i), q[i]);
  __m256 d, m;
  Halves8(p, ws, &d, Tr::kMin ? &m : nullptr);
  _mm256_store_ps(reinterpret_cast<float*>(o + L::kDw), d);
  if constexpr (Tr::kMin) _mm256_store_ps(reinterpret_cast<float*>(o + L::kMw), m);
}

// One group of 8 full rows (row r at w + r * ws): nb panel blocks at o.
template <DType kType>
void PackGroup(const uint8_t* w, int64_t ws, int64_t nb, uint8_t* o) {
  constexpr int64_t kBytes = sizeof(typename Traits<kType>::Block);
  const bool to_l1 = NextGroupFitsL1(ws);
  for (int64_t b = 0; b < nb; ++b, o += Layout<Traits<kType>>::kBlockBytes) {
    PrefetchNextGroup<sizeof(typename Traits<kType>::Block)>(w, ws, b, to_l1);
    PackBlock<kType>(w + b * kBytes, ws, o);
  }
}

template <DType kType>
int64_t RawRowBytes(int64_t n_in) {
  return n_in / 32 * static_cast<int64_t>(sizeof(typename Traits<kType>::Block));
}

// Panel of rows [0, n_rows): groups of 8 rows, per group the nb blocks in order.
template <DType kType>
void PackPanel(DType, const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, void* dst) {
  const int64_t nb = n_in / 32;
  PackGroupsOf8(w, ws, n_rows, RawRowBytes<kType>(n_in), Layout<Traits<kType>>::RowBytes(n_in) * 8, dst,
                [nb](const uint8_t* g, int64_t gs, uint8_t* o) { PackGroup<kType>(g, gs, nb, o); });
}

// ---------------------------------------------------------------- compute

// The f32 fold of block b, the same in every kernel: s[g][t] holds the
// integer dots sum_k u_k * q_x,k of 8 rows (unsigned levels; signed for
// Q8_0), dw / mw the rows' scales / mins.
template <DType kType, int G, int T>
inline void Fold(__m256i (&s)[G][T], const __m256* dw, const __m256* mw, const int8_t* const* a, int64_t b, int64_t nb,
                 int64_t n_in, __m256 (&acc)[G][T]) {
  using Tr = Traits<kType>;
  for (int t = 0; t < T; ++t) {
    const float* dv = reinterpret_cast<const float*>(a[t] + n_in);
    const __m256 dx = _mm256_set1_ps(dv[b]);
    if constexpr (Tr::kOffset != 0) {
      const __m256i off = _mm256_set1_epi32(Tr::kOffset * reinterpret_cast<const int32_t*>(dv + nb)[b]);
      for (int g = 0; g < G; ++g) s[g][t] = _mm256_sub_epi32(s[g][t], off);
    }
    for (int g = 0; g < G; ++g) {
      acc[g][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[g][t]), _mm256_mul_ps(dw[g], dx), acc[g][t]);
    }
    if constexpr (Tr::kMin) {
      const __m256 xs = _mm256_set1_ps(dv[2 * nb + b]);
      for (int g = 0; g < G; ++g) acc[g][t] = _mm256_fmadd_ps(mw[g], xs, acc[g][t]);
    }
  }
}

// The arithmetic of every kernel here: block b of G groups of 8 rows (group
// g's panel block at blk + g * gs) against T tokens (a[t]: activations of
// token t) folded into acc[g][t]. Integer sums in i16 where the bound
// allows (see the header), then the f32 fold.
template <DType kType, int G, int T>
inline void BlockStep(const uint8_t* blk, int64_t gs, const int8_t* const* a, int64_t b, int64_t nb, int64_t n_in,
                      __m256 (&acc)[G][T]) {
  using Tr = Traits<kType>;
  using L = Layout<Tr>;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i s[G][T];
  for (int g = 0; g < G; ++g)
    for (int t = 0; t < T; ++t) s[g][t] = _mm256_setzero_si256();
  if constexpr (Tr::kNib) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    // Rolled: unrolled, GCC hoists every product and spills the tile.
#pragma GCC unroll 1
    for (int q = 0; q < 4; ++q) {
      __m256i lo[G], hi[G];
      for (int g = 0; g < G; ++g) {
        const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + g * gs + 32 * q));
        lo[g] = _mm256_and_si256(v, m4);
        hi[g] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      }
      for (int t = 0; t < T; ++t) {
        const __m256i al = Bcast4(a[t] + 32 * b + 4 * q), ah = Bcast4(a[t] + 32 * b + 16 + 4 * q);
        for (int g = 0; g < G; ++g) {
          s[g][t] = _mm256_add_epi16(
              s[g][t], _mm256_add_epi16(_mm256_maddubs_epi16(lo[g], al), _mm256_maddubs_epi16(hi[g], ah)));
        }
      }
    }
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t) s[g][t] = _mm256_madd_epi16(s[g][t], ones);
  } else if constexpr (!Tr::kSigned) {  // Q5_0: i16 sums of four vectors at a time
    for (int h = 0; h < 2; ++h) {
      __m256i s16[G][T];
      for (int g = 0; g < G; ++g)
        for (int t = 0; t < T; ++t) s16[g][t] = _mm256_setzero_si256();
      for (int q = 4 * h; q < 4 * h + 4; ++q) {
        __m256i wv[G];
        for (int g = 0; g < G; ++g) wv[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + g * gs + 32 * q));
        for (int t = 0; t < T; ++t) {
          const __m256i av = Bcast4(a[t] + 32 * b + 4 * q);
          for (int g = 0; g < G; ++g) s16[g][t] = _mm256_add_epi16(s16[g][t], _mm256_maddubs_epi16(wv[g], av));
        }
      }
      for (int g = 0; g < G; ++g)
        for (int t = 0; t < T; ++t) s[g][t] = _mm256_add_epi32(s[g][t], _mm256_madd_epi16(s16[g][t], ones));
    }
  } else {  // Q8_0: |w| x sign(a, w)
    for (int q = 0; q < 8; ++q) {
      __m256i wv[G], wa[G];
      for (int g = 0; g < G; ++g) {
        wv[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + g * gs + 32 * q));
        wa[g] = _mm256_sign_epi8(wv[g], wv[g]);
      }
      for (int t = 0; t < T; ++t) {
        const __m256i av = Bcast4(a[t] + 32 * b + 4 * q);
        for (int g = 0; g < G; ++g) {
          const __m256i pr = _mm256_maddubs_epi16(wa[g], _mm256_sign_epi8(av, wv[g]));
          s[g][t] = _mm256_add_epi32(s[g][t], _mm256_madd_epi16(pr, ones));
        }
      }
    }
  }
  __m256 dw[G], mw[G];
  for (int g = 0; g < G; ++g) {
    dw[g] = _mm256_load_ps(reinterpret_cast<const float*>(blk + g * gs + L::kDw));
    if constexpr (Tr::kMin) mw[g] = _mm256_load_ps(reinterpret_cast<const float*>(blk + g * gs + L::kMw));
  }
  Fold<kType, G, T>(s, dw, mw, a, b, nb, n_in, acc);
}

// Over the panel: register tile of G groups x T tokens.
constexpr int64_t kPackedPrefetchAhead = 1536;  // bytes; 1024 / 2048 / 3072 measured slower

template <DType kType>
struct PanelKernel {
  template <int G, int T>
  static void Run(const uint8_t* p, int64_t gs, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    const int64_t nb = n_in / 32;
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(act + t * as);
    __m256 acc[G][T];
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t) acc[g][t] = _mm256_setzero_ps();
    constexpr int64_t kB = Layout<Traits<kType>>::kBlockBytes;
    if constexpr (G == 1) {
      // One group streams its blocks in order (decode and small batches,
      // memory bound): software prefetch kPackedPrefetchAhead bytes ahead
      // keeps more lines in flight than the hardware prefetchers do (Zen 3,
      // Q4_0 1 token: 460 -> 360 us per 8192x2048 call, 2 threads).
      for (int64_t b = 0; b < nb; ++b) {
        const char* f = reinterpret_cast<const char*>(p + b * kB + kPackedPrefetchAhead);
        for (int64_t o = 0; o < kB; o += 64) _mm_prefetch(f + o, _MM_HINT_T0);
        BlockStep<kType, G, T>(p + b * kB, gs, a, b, nb, n_in, acc);
      }
    } else {
      for (int64_t b = 0; b < nb; ++b) BlockStep<kType, G, T>(p + b * kB, gs, a, b, nb, n_in, acc);
    }
    StoreTile<G, T>(acc, rows_left, y, ldy);
  }
};

// Straight from the weight rows (small batches, where a panel would not pay
// for itself): one group of 8 full rows (w + r * ws) x T tokens, each block
// packed into a stack buffer just before BlockStep reads it, so the results
// are bitwise those of PanelKernel.
template <DType kType>
struct FusedKernel {
  template <int G, int T>
  static void Run(const uint8_t* w, int64_t ws, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    static_assert(G == 1);
    constexpr int64_t kBytes = sizeof(typename Traits<kType>::Block);
    const int64_t nb = n_in / 32;
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(act + t * as);
    __m256 acc[1][T];
    for (int t = 0; t < T; ++t) acc[0][t] = _mm256_setzero_ps();
    alignas(32) uint8_t blk[Layout<Traits<kType>>::kBlockBytes];
    const bool to_l1 = NextGroupFitsL1(ws);
    for (int64_t b = 0; b < nb; ++b) {
      PrefetchNextGroup<sizeof(typename Traits<kType>::Block)>(w, ws, b, to_l1);
      PackBlock<kType>(w + b * kBytes, ws, blk);
      BlockStep<kType, 1, T>(blk, 0, a, b, nb, n_in, acc);
    }
    StoreTile<1, T>(acc, rows_left, y, ldy);
  }
};

// Q5_0 / Q8_0 straight from the weight rows without a transpose: each row's
// block is multiplied in element order and the 8 rows' partial sums are
// reduced to one vector of row sums. The integer block dots are exactly the
// panel's, and Fold is shared, so the results are bitwise PanelKernel's;
// cheaper than FusedKernel for these types (no 8x8 transpose per block).
template <DType kType>
struct FusedRowsKernel {
  template <int G, int T>
  static void Run(const uint8_t* w, int64_t ws, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    static_assert(G == 1 && !Traits<kType>::kNib && !Traits<kType>::kMin);
    constexpr bool kSigned = Traits<kType>::kSigned;
    constexpr int64_t kBytes = sizeof(typename Traits<kType>::Block);
    const int64_t nb = n_in / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(act + t * as);
    __m256 acc[1][T];
    for (int t = 0; t < T; ++t) acc[0][t] = _mm256_setzero_ps();
    const bool to_l1 = NextGroupFitsL1(ws);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* p = w + b * kBytes;
      PrefetchNextGroup<sizeof(typename Traits<kType>::Block)>(w, ws, b, to_l1);
      __m256i s[1][T];
      for (int t = 0; t < T; ++t) {
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t] + 32 * b));
        __m256i part[8];
        for (int r = 0; r < 8; ++r) {
          const __m256i lv = RowLevels<kType>(p + r * ws);
          const __m256i pr = kSigned ? _mm256_maddubs_epi16(_mm256_sign_epi8(lv, lv), _mm256_sign_epi8(av, lv))
                                     : _mm256_maddubs_epi16(lv, av);
          part[r] = _mm256_madd_epi16(pr, ones);
        }
        s[0][t] = ReduceRows8(part);
      }
      __m256 dw[1];
      Halves8(p, ws, dw, nullptr);
      Fold<kType, 1, T>(s, dw, dw, a, b, nb, n_in, acc);
    }
    StoreTile<1, T>(acc, rows_left, y, ldy);
  }
};

// ps: bytes per row of the panel (an 8-row group is 8 * ps bytes). Token
// tiles outer (their activations stay in L1), groups of rows inner.
template <class K, int kG, int kT>
void ComputeTiles(const uint8_t* p, int64_t ps, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                  int64_t n_in, float* y, int64_t ldy) {
  GroupTileLoop<K, 8, kG, kT>(p, ps, n_rows, act, as, n_tok, n_in, y, ldy);
}

// The fused kernel over raw weight rows (stride ws).
template <DType kType, int kT>
void ComputeFused(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                  int64_t n_in, float* y, int64_t ldy) {
  using K = std::conditional_t<Traits<kType>::kNib, FusedKernel<kType>, FusedRowsKernel<kType>>;
  FusedGroupLoop<K, 8, kT>(w, ws, n_rows, RawRowBytes<kType>(n_in), act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- plans

constexpr int64_t kPanelChunk = 32;  // rows per panel (a multiple of 8 * kG)
constexpr int64_t kFusedChunk = 16;  // rows per fused work item

template <DType kType>
constexpr Plan MakePanelPlan() {
  return {ActBytes, ConvertAct, Layout<Traits<kType>>::RowBytes, PackPanel<kType>,
          ComputeTiles<PanelKernel<kType>, Traits<kType>::kTileG, Traits<kType>::kTileT>, kPanelChunk,
          "avx2/int8-panel"};
}

template <DType kType>
constexpr Plan MakeFusedPlan() {
  return {ActBytes, ConvertAct, nullptr, nullptr, ComputeFused<kType, 4>, kFusedChunk, "avx2/int8-fused-gemv"};
}

// Pre-packed panels (PackedWeightStore): no pack_rows, compute reads the
// stored groups. Small batches take one group x 4 tokens (the weights are read
// once, as by the fused kernel), larger ones the panel's register tile.
template <DType kType>
constexpr Plan MakePackedGemvPlan() {
  return {ActBytes, ConvertAct, nullptr, nullptr, ComputeTiles<PanelKernel<kType>, 1, 4>, kFusedChunk,
          "avx2/packed-gemv"};
}

template <DType kType>
constexpr Plan MakePackedPanelPlan() {
  return {ActBytes, ConvertAct, nullptr, nullptr,
          ComputeTiles<PanelKernel<kType>, Traits<kType>::kTileG, Traits<kType>::kTileT>, kPanelChunk,
          "avx2/packed-panel"};
}

const Plan kPanel[] = {MakePanelPlan<DType::kQ4_0>(), MakePanelPlan<DType::kQ4_1>(), MakePanelPlan<DType::kQ5_0>(),
                       MakePanelPlan<DType::kQ8_0>()};
const Plan kFused[] = {MakeFusedPlan<DType::kQ4_0>(), MakeFusedPlan<DType::kQ4_1>(), MakeFusedPlan<DType::kQ5_0>(),
                       MakeFusedPlan<DType::kQ8_0>()};

// From kPanelMinTokens (measured as thread CPU time, docs/PERFORMANCE.md
// "AVX2 int8 panel") the per-call panel pays for itself; below, the fused kernel.
constexpr int64_t kPanelMin[] = {Traits<DType::kQ4_0>::kPanelMinTokens, Traits<DType::kQ4_1>::kPanelMinTokens,
                                 Traits<DType::kQ5_0>::kPanelMinTokens, Traits<DType::kQ8_0>::kPanelMinTokens};

// Q5_0 is not pre-packed: its panel spends a byte per level (1.6x the
// checkpoint's bytes), which would slow decode more than the repack costs.
const Plan kPackedGemv[] = {MakePackedGemvPlan<DType::kQ4_0>(), MakePackedGemvPlan<DType::kQ4_1>(),
                            MakePackedGemvPlan<DType::kQ8_0>()};
const Plan kPackedPanel[] = {MakePackedPanelPlan<DType::kQ4_0>(), MakePackedPanelPlan<DType::kQ4_1>(),
                             MakePackedPanelPlan<DType::kQ8_0>()};
constexpr int64_t kPackedPanelMin[] = {Traits<DType::kQ4_0>::kPanelMinTokens, Traits<DType::kQ4_1>::kPanelMinTokens,
                                       Traits<DType::kQ8_0>::kPanelMinTokens};

int PackedIndex(DType type) {
  switch (type) {
    case DType::kQ4_0: return 0;
    case DType::kQ4_1: return 1;
    case DType::kQ8_0: return 2;
    default: return -1;
  }
}

int64_t PanelRowBytes(DType type, int64_t n_in) {
  switch (type) {
    case DType::kQ4_0: return Layout<Traits<DType::kQ4_0>>::RowBytes(n_in);
    case DType::kQ4_1: return Layout<Traits<DType::kQ4_1>>::RowBytes(n_in);
    case DType::kQ8_0: return Layout<Traits<DType::kQ8_0>>::RowBytes(n_in);
    default: return 0;
  }
}

int PlanIndex(DType type) {
  switch (type) {
    case DType::kQ4_0: return 0;
    case DType::kQ4_1: return 1;
    case DType::kQ5_0: return 2;
    case DType::kQ8_0: return 3;
    default: return -1;
  }
}

}  // namespace

const Plan* Avx2Int8PanelPlan(DType type, int64_t n_tokens, BatchPath path) {
  const int i = PlanIndex(type);
  if (i < 0) return Avx2KQuantPanelPlan(type, n_tokens, path);
  if (path == BatchPath::kGemv) return &kFused[i];
  if (path == BatchPath::kPanel) return &kPanel[i];
  return n_tokens >= kPanelMin[i] ? &kPanel[i] : &kFused[i];
}

const Plan* Avx2PackedPlan(DType type, int64_t n_tokens) {
  const int i = PackedIndex(type);
  if (i < 0) return Avx2KQuantPackedPlan(type, n_tokens);
  return n_tokens >= kPackedPanelMin[i] ? &kPackedPanel[i] : &kPackedGemv[i];
}

int64_t Avx2PackedBytes(DType type, int64_t n_rows, int64_t n_in) {
  if (PackedIndex(type) < 0) return Avx2KQuantPackedBytes(type, n_rows, n_in);
  if (n_in % 32 != 0) return 0;
  return (n_rows + 7) / 8 * 8 * PanelRowBytes(type, n_in);
}

int64_t Avx2PackedRowStride(DType type, int64_t n_in) {
  return PackedIndex(type) < 0 ? Avx2KQuantPackedRowStride(type, n_in) : PanelRowBytes(type, n_in);
}

// Rows [0, n_rows), n_rows <= 8: one group (PackPanel pads a partial one).
void Avx2PackRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, uint8_t* dst) {
  PAGODA_CHECK(n_rows <= 8) << "Avx2PackRows packs one group of 8 rows";
  switch (type) {
    case DType::kQ4_0: return PackPanel<DType::kQ4_0>(type, w, w_stride, n_rows, n_in, dst);
    case DType::kQ4_1: return PackPanel<DType::kQ4_1>(type, w, w_stride, n_rows, n_in, dst);
    case DType::kQ8_0: return PackPanel<DType::kQ8_0>(type, w, w_stride, n_rows, n_in, dst);
    default: return Avx2KQuantPackRows(type, w, w_stride, n_rows, n_in, dst);
  }
}

}  // namespace pagoda::kernels::internal
