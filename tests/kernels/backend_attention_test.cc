// Backend::StoreKv and Backend::PagedAttention on each backend and KV type:
// the stored pool must equal, byte for byte, what StoreKvRow /
// StoreKvRowQuantized write; attention over it must match AttentionReference
// (double) read from the same pool through KvView block lists. Scattered
// block tables, a one-token sequence, partial last blocks, GQA groups larger
// than a CUDA thread block's (12 query heads on one KV head), odd head dims.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/backend_test_support.h"
#include "kernels/cpu/ops.h"

namespace pagoda::kernels {
namespace {

struct Shape {
  int n_head, n_head_kv, head_dim_k, head_dim_v, block_size;
};
const Shape kShapes[] = {
    {6, 2, 64, 64, 16},   // GQA 3:1
    {12, 1, 72, 40, 8},   // MQA, 12 heads (two CUDA head groups), odd dims, K and V widths differ
    {5, 5, 32, 32, 16},   // MHA, odd head count
};
const KvType kTypes[] = {KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8};
constexpr int32_t kPoolBlocks = 24;
constexpr uint8_t kPoison = 0xA5;

using AttnParam = std::tuple<const char*, KvType, int /*shape*/>;
class BackendAttentionTest : public BackendTestBase<AttnParam> {};

// The host copy of a pool and the KvView of one sequence over it.
struct HostPool {
  KvType type;
  Shape sh;
  std::vector<uint8_t> k, v, k_scales, v_scales;
  int64_t KBlockBytes() const { return int64_t{sh.block_size} * sh.n_head_kv * sh.head_dim_k * KvTypeSize(type); }
  int64_t VBlockBytes() const { return int64_t{sh.block_size} * sh.n_head_kv * sh.head_dim_v * KvTypeSize(type); }
  int64_t ScaleBlock() const { return int64_t{sh.block_size} * sh.n_head_kv; }
};

struct SeqView {
  std::vector<const void*> kb, vb;
  std::vector<const uint8_t*> ks, vs;
  KvView view;
};

SeqView ViewOf(const HostPool& p, const std::vector<int32_t>& table) {
  SeqView s;
  for (int32_t id : table) {
    s.kb.push_back(p.k.data() + id * p.KBlockBytes());
    s.vb.push_back(p.v.data() + id * p.VBlockBytes());
    if (KvTypeHasScales(p.type)) {
      s.ks.push_back(p.k_scales.data() + id * p.ScaleBlock());
      s.vs.push_back(p.v_scales.data() + id * p.ScaleBlock());
    }
  }
  s.view.type = p.type;
  s.view.k_blocks = s.kb.data();
  s.view.v_blocks = s.vb.data();
  s.view.block_size = p.sh.block_size;
  s.view.k_pos_stride = int64_t{p.sh.n_head_kv} * p.sh.head_dim_k;
  s.view.k_head_stride = p.sh.head_dim_k;
  s.view.v_pos_stride = int64_t{p.sh.n_head_kv} * p.sh.head_dim_v;
  s.view.v_head_stride = p.sh.head_dim_v;
  if (KvTypeHasScales(p.type)) {
    s.view.k_scales = s.ks.data();
    s.view.v_scales = s.vs.data();
  }
  return s;
}

// Stores one position's row as the CPU cache does.
void StoreHost(HostPool& p, bool is_k, int32_t block, int32_t slot, const float* src) {
  const int hd = is_k ? p.sh.head_dim_k : p.sh.head_dim_v;
  std::vector<uint8_t>& data = is_k ? p.k : p.v;
  uint8_t* dst = data.data() + (int64_t{block} * p.sh.block_size + slot) * p.sh.n_head_kv * hd * KvTypeSize(p.type);
  if (!KvTypeHasScales(p.type)) {
    StoreKvRow(src, int64_t{p.sh.n_head_kv} * hd, p.type, dst);
    return;
  }
  uint8_t* sc = (is_k ? p.k_scales : p.v_scales).data() + block * p.ScaleBlock() + slot;
  StoreKvRowQuantized(src, p.sh.n_head_kv, hd, p.type, dst, sc, p.sh.block_size);
}

TEST_P(BackendAttentionTest, StoresAsTheCpuCacheAndAttendsAsTheReference) {
  const auto [device, type, shape_index] = GetParam();
  const Shape sh = kShapes[shape_index];
  const std::vector<int32_t> lengths = {1, 2 * sh.block_size + 1, 40};
  const int32_t n_seqs = static_cast<int32_t>(lengths.size());
  const int32_t max_blocks = (40 + sh.block_size - 1) / sh.block_size;

  // Scattered block tables over one pool; unused entries -1.
  std::vector<int32_t> ids(kPoolBlocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(71 + shape_index));
  std::vector<int32_t> tables(n_seqs * max_blocks, -1);
  std::vector<std::vector<int32_t>> seq_tables(n_seqs);
  int next = 0;
  for (int32_t s = 0; s < n_seqs; ++s) {
    for (int32_t i = 0; i < (lengths[s] + sh.block_size - 1) / sh.block_size; ++i) {
      tables[s * max_blocks + i] = ids[next];
      seq_tables[s].push_back(ids[next++]);
    }
  }

  // Every position of every sequence stored in one call.
  std::vector<int32_t> positions, row_seq;
  for (int32_t s = 0; s < n_seqs; ++s) {
    for (int32_t p = 0; p < lengths[s]; ++p) {
      positions.push_back(p);
      row_seq.push_back(s);
    }
  }
  const int64_t n_rows = static_cast<int64_t>(positions.size());
  const int64_t k_width = int64_t{sh.n_head_kv} * sh.head_dim_k, v_width = int64_t{sh.n_head_kv} * sh.head_dim_v;
  const int64_t k_stride = k_width + 3;  // rows with a gap
  std::vector<float> k = RandomFloats(n_rows * k_stride, 81), v = RandomFloats(n_rows * v_width, 82);
  for (int64_t i = 0; i < k_width; ++i) k[5 * k_stride + i] *= 30.0f;   // a large row: a large fp8 / int8 scale
  std::fill(v.begin() + 3 * v_width, v.begin() + 4 * v_width, 0.0f);   // a zero row: scale byte 0

  HostPool host{type, sh, {}, {}, {}, {}};
  host.k.assign(kPoolBlocks * host.KBlockBytes(), kPoison);
  host.v.assign(kPoolBlocks * host.VBlockBytes(), kPoison);
  host.k_scales.assign(kPoolBlocks * host.ScaleBlock(), kPoison);
  host.v_scales.assign(kPoolBlocks * host.ScaleBlock(), kPoison);
  DeviceBuffer dk_pool = Upload(host.k), dv_pool = Upload(host.v), dks = Upload(host.k_scales),
               dvs = Upload(host.v_scales);
  for (int64_t r = 0; r < n_rows; ++r) {
    const int32_t block = tables[row_seq[r] * max_blocks + positions[r] / sh.block_size];
    StoreHost(host, true, block, positions[r] % sh.block_size, k.data() + r * k_stride);
    StoreHost(host, false, block, positions[r] % sh.block_size, v.data() + r * v_width);
  }

  KvPoolView pool;
  pool.type = type;
  pool.n_blocks = kPoolBlocks;
  pool.block_size = sh.block_size;
  pool.n_head_kv = sh.n_head_kv;
  pool.head_dim_k = sh.head_dim_k;
  pool.head_dim_v = sh.head_dim_v;
  pool.k = dk_pool.data();
  pool.v = dv_pool.data();
  pool.k_scales = dks.as<uint8_t>();
  pool.v_scales = dvs.as<uint8_t>();
  DeviceBuffer d_tables = Upload(tables), d_pos = Upload(positions), d_seq = Upload(row_seq), d_k = Upload(k),
               d_v = Upload(v);
  PagedBatch store{n_rows, d_pos.as<int32_t>(), d_seq.as<int32_t>(), d_tables.as<int32_t>(), n_seqs, max_blocks};
  ASSERT_TRUE(backend().StoreKv(stream(), pool, store, d_k.as<float>(), k_stride, d_v.as<float>(), v_width).ok());
  ASSERT_EQ(Download<uint8_t>(dk_pool, host.k.size()), host.k) << "K pool";
  ASSERT_EQ(Download<uint8_t>(dv_pool, host.v.size()), host.v) << "V pool";
  if (KvTypeHasScales(type)) {
    ASSERT_EQ(Download<uint8_t>(dks, host.k_scales.size()), host.k_scales) << "K scales";
    ASSERT_EQ(Download<uint8_t>(dvs, host.v_scales.size()), host.v_scales) << "V scales";
  }

  // Query rows: each sequence's last position (decode) and, for the longest,
  // a prefill chunk's rows at block boundaries.
  std::vector<int32_t> q_pos, q_seq;
  for (int32_t s = 0; s < n_seqs; ++s) {
    q_pos.push_back(lengths[s] - 1);
    q_seq.push_back(s);
  }
  for (int32_t p : {0, sh.block_size - 1, sh.block_size, 33}) {
    q_pos.push_back(p);
    q_seq.push_back(2);
  }
  const int64_t n_q = static_cast<int64_t>(q_pos.size());
  const int64_t q_stride = int64_t{sh.n_head} * sh.head_dim_k, out_stride = int64_t{sh.n_head} * sh.head_dim_v;
  const std::vector<float> q = RandomFloats(n_q * q_stride, 91, 3.0f);  // peaked softmax, as trained models have
  AttentionShape ash{sh.n_head, sh.n_head_kv, sh.head_dim_k, sh.head_dim_v,
                     1.0f / std::sqrt(static_cast<float>(sh.head_dim_k))};

  std::vector<SeqView> views;
  std::vector<std::vector<int32_t>> rows(n_seqs);
  for (int32_t s = 0; s < n_seqs; ++s) views.push_back(ViewOf(host, seq_tables[s]));
  for (int64_t r = 0; r < n_q; ++r) rows[q_seq[r]].push_back(static_cast<int32_t>(r));
  std::vector<AttentionSeq> seqs;
  for (int32_t s = 0; s < n_seqs; ++s) seqs.push_back({views[s].view, rows[s].data(), static_cast<int32_t>(rows[s].size())});
  std::vector<float> want(n_q * out_stride);
  AttentionReference(ash, q.data(), q_stride, q_pos.data(), seqs.data(), n_seqs, want.data(), out_stride);

  DeviceBuffer d_q = Upload(q), d_qpos = Upload(q_pos), d_qseq = Upload(q_seq), d_out = PoisonedFloats(n_q * out_stride);
  PagedBatch attend{n_q, d_qpos.as<int32_t>(), d_qseq.as<int32_t>(), d_tables.as<int32_t>(), n_seqs, max_blocks};
  ASSERT_TRUE(backend()
                  .PagedAttention(stream(), ash, pool, attend, d_q.as<float>(), q_stride, d_out.as<float>(), out_stride)
                  .ok());
  const std::vector<float> got = Download<float>(d_out, want.size());
  // f32 arithmetic against double: 2e-5 absolute on convex combinations of
  // N(0,1) values. f16: the reference (and the CPU kernel) round the weights
  // P to f16; the CUDA kernel keeps them in f32 (online softmax), so up to
  // 2^-11 * max|v| apart.
  const double bound = type == KvType::kF16 ? 3e-3 : 2e-5;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << "element " << i << " not written";
    ASSERT_NEAR(got[i], want[i], bound) << device << " " << KvTypeName(type) << " element " << i;
  }
}

std::string AttnName(const ::testing::TestParamInfo<AttnParam>& info) {
  const auto [d, t, s] = info.param;
  return std::string(d) + "_" + KvTypeName(t) + "_shape" + std::to_string(s);
}

INSTANTIATE_TEST_SUITE_P(All, BackendAttentionTest,
                         ::testing::Combine(::testing::ValuesIn(kBackendNames), ::testing::ValuesIn(kTypes),
                                            ::testing::Range(0, 3)),
                         AttnName);

}  // namespace
}  // namespace pagoda::kernels
