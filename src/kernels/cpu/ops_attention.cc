// Attention(): validation, work split over (sequence, kv head, query tile) and
// run-time ISA choice; the tile itself is in ops_attention_tile_impl.inc.
// Also the KV element types and their stores.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <string>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/ops_attention_tile.h"
#include "tensor/fp16.h"

#define PAGODA_ATTENTION_TILE_FN AttentionTileBaseline
#define PAGODA_STORE_F16_FN StoreF16Baseline
#define PAGODA_LOAD_KV_ROW_FN LoadKvRowBaseline
#define PAGODA_STORE_KV_QUANTIZED_FN StoreKvQuantizedBaseline
#include "kernels/cpu/ops_attention_tile_impl.inc"

namespace pagoda::kernels {
namespace {

// Queries per tile (rows x GQA ratio): keeps the tile's Q and O in L1/L2.
constexpr int kMaxTileQueries = 64;
// Below this many multiply-adds the pool's wake-up costs more than it saves.
constexpr int64_t kMinParallelWork = 1 << 16;
// f16 tiles keep their scores ([queries, keys]); past this many floats per
// thread the tile gets fewer query rows (at least one).
constexpr int64_t kMaxScoreFloats = 1 << 18;

float* ThreadScratch(int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(n);
  return buf.data();
}

}  // namespace

const char* KvTypeName(KvType t) {
  switch (t) {
    case KvType::kF32: return "f32";
    case KvType::kF16: return "f16";
    case KvType::kBf16: return "bf16";
    case KvType::kFp8E4M3: return "fp8_e4m3";
    case KvType::kInt8: return "int8";
  }
  return "?";
}

const char* KvTypeChoices() { return "f16|bf16|fp8_e4m3|int8|f32"; }

std::optional<KvType> ParseKvType(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8}) {
    if (lower == KvTypeName(t)) return t;
  }
  if (lower == "fp8" || lower == "fp8_e4m3fn") return KvType::kFp8E4M3;
  return std::nullopt;
}

void StoreKvRow(const float* src, int64_t n, KvType type, void* dst) {
  switch (type) {
    case KvType::kF32:
      std::copy(src, src + n, static_cast<float*>(dst));
      return;
    case KvType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      switch (ActiveIsa()) {
        case Isa::kAvx512: return internal::StoreF16Avx512(src, n, h);
        case Isa::kAvx2: return internal::StoreF16Avx2(src, n, h);
        case Isa::kScalar: return internal::StoreF16Baseline(src, n, h);
      }
      return;
    }
    case KvType::kBf16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = F32ToBF16(src[i]);
      return;
    }
    case KvType::kFp8E4M3:
    case KvType::kInt8:
      PAGODA_CHECK(false) << "StoreKvRow of scaled type " << KvTypeName(type) << ": use StoreKvRowQuantized";
  }
}

void LoadKvRow(const void* src, int64_t n, KvType type, float scale, float* dst) {
  switch (ActiveIsa()) {
    case Isa::kAvx512: return internal::LoadKvRowAvx512(src, n, type, scale, dst);
    case Isa::kAvx2: return internal::LoadKvRowAvx2(src, n, type, scale, dst);
    case Isa::kScalar: return internal::LoadKvRowBaseline(src, n, type, scale, dst);
  }
}

void Attention(const AttentionShape& sh, const float* q, int64_t q_stride,
               const int32_t* positions, const AttentionSeq* seqs, int n_seqs, float* out,
               int64_t out_stride, ThreadPool& pool) {
  PAGODA_CHECK(sh.n_head > 0 && sh.n_head_kv > 0 && sh.n_head % sh.n_head_kv == 0);
  PAGODA_CHECK(sh.head_dim_k > 0 && sh.head_dim_v > 0);
  const int ratio = sh.n_head / sh.n_head_kv;
  if (n_seqs == 0) return;
  const KvType type = seqs[0].kv.type;

  int32_t n_keys_max = 1;
  int64_t work = 0;
  for (int s = 0; s < n_seqs; ++s) {
    PAGODA_CHECK(seqs[s].kv.block_size > 0);
    PAGODA_CHECK(seqs[s].kv.type == type);
    const int32_t n_rows = seqs[s].n_rows;
    int32_t max_pos = 0;
    for (int32_t r = 0; r < n_rows; ++r) max_pos = std::max(max_pos, positions[seqs[s].rows[r]]);
    n_keys_max = std::max(n_keys_max, max_pos + 1);
    work += static_cast<int64_t>(n_rows) * (max_pos + 1) * sh.n_head * (sh.head_dim_k + sh.head_dim_v);
  }
  int rows_per_tile = std::max(1, kMaxTileQueries / ratio);
  if (type == KvType::kF16) {
    const int64_t per_row = static_cast<int64_t>(ratio) * (n_keys_max + internal::kKeyBlock);
    rows_per_tile = static_cast<int>(std::clamp<int64_t>(kMaxScoreFloats / per_row, 1, rows_per_tile));
  }
  int64_t n_tiles = 0;  // (sequence, query tile, kv head)
  for (int s = 0; s < n_seqs; ++s) {
    n_tiles += static_cast<int64_t>((seqs[s].n_rows + rows_per_tile - 1) / rows_per_tile) * sh.n_head_kv;
  }
  if (n_tiles == 0) return;
  // Fewer tiles than threads (one sequence's decode under MQA / MLA, whose
  // one KV head holds every query head): split each tile's query heads into
  // head_split parts, so the threads share the keys' reads. A query's scores,
  // softmax and output are formed the same way in any part (batch invariance).
  int head_split = 1;
  if (pool.size() > 1 && work >= kMinParallelWork && n_tiles < 2 * pool.size()) {
    head_split = static_cast<int>(std::min<int64_t>(ratio, (2 * pool.size() + n_tiles - 1) / n_tiles));
  }
  const int64_t n_items = n_tiles * head_split;

  auto tile_fn = internal::AttentionTileBaseline;
  if (ActiveIsa() == Isa::kAvx512) tile_fn = internal::AttentionTileAvx512;
  if (ActiveIsa() == Isa::kAvx2) tile_fn = internal::AttentionTileAvx2;
  const int64_t scratch_floats =
      internal::AttentionTileScratchFloats(sh, type, rows_per_tile, n_keys_max);

  // Item i -> (sequence, tile, kv head); the last items hold the latest
  // positions (most keys), so they are handed out first.
  auto run_item = [&](int64_t item, float* scratch) {
    const int part = static_cast<int>(item % head_split);
    item /= head_split;
    int s = 0;
    int64_t n_seq_items = 0;
    for (; s < n_seqs; ++s) {
      n_seq_items = static_cast<int64_t>((seqs[s].n_rows + rows_per_tile - 1) / rows_per_tile) *
                    sh.n_head_kv;
      if (item < n_seq_items) break;
      item -= n_seq_items;
    }
    const int tile = static_cast<int>(item / sh.n_head_kv);
    const int g = static_cast<int>(item % sh.n_head_kv);
    const int r0 = tile * rows_per_tile;
    internal::AttentionTileArgs args;
    args.shape = &sh;
    args.q = q;
    args.q_stride = q_stride;
    args.positions = positions;
    args.kv = &seqs[s].kv;
    args.rows = seqs[s].rows + r0;
    args.n_rows = std::min(rows_per_tile, seqs[s].n_rows - r0);
    args.g = g;
    args.h0 = part * ratio / head_split;
    args.n_h = (part + 1) * ratio / head_split - args.h0;
    args.out = out;
    args.out_stride = out_stride;
    args.scratch = scratch;
    tile_fn(args);
  };

  if (pool.size() == 1 || n_items == 1 || work < kMinParallelWork) {
    float* scratch = ThreadScratch(scratch_floats);
    for (int64_t i = n_items - 1; i >= 0; --i) run_item(i, scratch);
    return;
  }
  std::atomic<int64_t> next{0};
  pool.Run([&](int, int) {
    float* scratch = ThreadScratch(scratch_floats);
    for (int64_t i = next.fetch_add(1); i < n_items; i = next.fetch_add(1)) {
      run_item(n_items - 1 - i, scratch);
    }
  });
}

}  // namespace pagoda::kernels
