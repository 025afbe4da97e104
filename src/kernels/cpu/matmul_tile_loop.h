// TileLoop: drives a register-tile kernel K::Run<R, T> over an
// [n_rows x n_tok] output. Token tiles outer (activations stay in L1 across
// the rows of a chunk), row tiles inner. GroupTileLoop does the same for the
// int8 panel kernels, whose row tiles are groups of interleaved rows.
// ISA-neutral: each kernel file
// instantiates it with its own (internal-linkage) kernel types, so code built
// with different ISA flags is never merged.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace pagoda::kernels::internal {
namespace {

// Runs K::Run<R, t> for the actual token count nt <= T.
template <class K, int R, int T, int t>
inline void RunTok(int nt, const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y,
                   int64_t ldy) {
  if constexpr (t >= 1) {
    if (nt == t) return K::template Run<R, t>(w, ws, act, as, n_in, y, ldy);
    RunTok<K, R, T, t - 1>(nt, w, ws, act, as, n_in, y, ldy);
  }
}

template <class K, int R, int T>
void TileLoop(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
              int64_t n_in, float* y, int64_t ldy) {
  for (int64_t t0 = 0; t0 < n_tok; t0 += T) {
    const int nt = static_cast<int>(std::min<int64_t>(T, n_tok - t0));
    const uint8_t* at = act + t0 * as;
    float* yt = y + t0 * ldy;
    int64_t r = 0;
    for (; r + R <= n_rows; r += R) RunTok<K, R, T, T>(nt, w + r * ws, ws, at, as, n_in, yt + r, ldy);
    for (; r < n_rows; ++r) RunTok<K, 1, T, T>(nt, w + r * ws, ws, at, as, n_in, yt + r, ldy);
  }
}

// Runs K::Run<G, t>(p, gs, rows_left, ...) for the actual token count nt <= T:
// G groups of a panel whose groups are gs bytes apart, rows_left rows from p on.
template <class K, int G, int T>
inline void RunGroupTok(int nt, const uint8_t* p, int64_t gs, int64_t rows_left, const uint8_t* act, int64_t as,
                        int64_t n_in, float* y, int64_t ldy) {
  if constexpr (T >= 1) {
    if (nt == T) return K::template Run<G, T>(p, gs, rows_left, act, as, n_in, y, ldy);
    RunGroupTok<K, G, T - 1>(nt, p, gs, rows_left, act, as, n_in, y, ldy);
  }
}

// A panel of groups of kGroupRows rows, ps bytes per row (a group is
// kGroupRows * ps bytes): register tiles of kG groups x kT tokens.
template <class K, int kGroupRows, int kG, int kT>
void GroupTileLoop(const uint8_t* p, int64_t ps, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                   int64_t n_in, float* y, int64_t ldy) {
  const int64_t gs = kGroupRows * ps;
  const int64_t n_groups = (n_rows + kGroupRows - 1) / kGroupRows;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kT) {
    const int nt = static_cast<int>(std::min<int64_t>(kT, n_tok - t0));
    const uint8_t* at = act + t0 * as;
    float* yt = y + t0 * ldy;
    int64_t g = 0;
    for (; g + kG <= n_groups; g += kG) {
      RunGroupTok<K, kG, kT>(nt, p + g * gs, gs, n_rows - kGroupRows * g, at, as, n_in, yt + kGroupRows * g, ldy);
    }
    for (; g < n_groups; ++g) {
      RunGroupTok<K, 1, kT>(nt, p + g * gs, gs, n_rows - kGroupRows * g, at, as, n_in, yt + kGroupRows * g, ldy);
    }
  }
}

// The rows [r0, n_rows) (fewer than kGroupRows of them) as kGroupRows full
// rows of row_bytes, zero padded (zero blocks: levels 0, scale 0, so the
// missing rows come out 0).
template <int kGroupRows>
inline std::vector<uint8_t> PadGroup(const uint8_t* w, int64_t ws, int64_t r0, int64_t n_rows, int64_t row_bytes) {
  std::vector<uint8_t> pad(kGroupRows * row_bytes, 0);
  for (int64_t r = r0; r < n_rows; ++r) std::memcpy(pad.data() + (r - r0) * row_bytes, w + r * ws, row_bytes);
  return pad;
}

// A fused kernel K (K::Run<1, T> over one group of kGroupRows raw weight
// rows, stride ws) over rows [0, n_rows), kT tokens at a time; a partial last
// group reads a zero-padded copy (row_bytes: the bytes of one raw row).
template <class K, int kGroupRows, int kT>
void FusedGroupLoop(const uint8_t* w, int64_t ws, int64_t n_rows, int64_t row_bytes, const uint8_t* act, int64_t as,
                    int64_t n_tok, int64_t n_in, float* y, int64_t ldy) {
  const int64_t full = n_rows / kGroupRows * kGroupRows;
  std::vector<uint8_t> pad;
  if (full < n_rows) pad = PadGroup<kGroupRows>(w, ws, full, n_rows, row_bytes);
  for (int64_t t0 = 0; t0 < n_tok; t0 += kT) {
    const int nt = static_cast<int>(std::min<int64_t>(kT, n_tok - t0));
    const uint8_t* at = act + t0 * as;
    float* yt = y + t0 * ldy;
    for (int64_t r = 0; r < full; r += kGroupRows) {
      RunGroupTok<K, 1, kT>(nt, w + r * ws, ws, kGroupRows, at, as, n_in, yt + r, ldy);
    }
    if (full < n_rows) {
      RunGroupTok<K, 1, kT>(nt, pad.data(), row_bytes, n_rows - full, at, as, n_in, yt + full, ldy);
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels::internal
