#include "kv/block_convert.h"

#include <cstring>
#include <vector>

#include "kv/block_pool.h"

namespace pagoda::kv {
namespace {

BlockPoolOptions PoolOptionsOf(const BlockLayout& l) {
  BlockPoolOptions o;
  o.layers = l.layers;
  o.type = l.type;
  o.block_size = l.block_size;
  return o;
}

bool SameShape(const BlockLayout& a, const BlockLayout& b) {
  if (a.block_size != b.block_size || a.layers.size() != b.layers.size()) return false;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const KvLayerWidths& x = a.layers[i];
    const KvLayerWidths& y = b.layers[i];
    if (x.k != y.k || x.v != y.v || x.n_head_kv != y.n_head_kv) return false;
  }
  return true;
}

}  // namespace

BlockLayout LayoutWithType(const BlockLayout& layout, kernels::KvType type, uint64_t fingerprint) {
  BlockLayout l = layout;
  l.type = type;
  l.model_fingerprint = fingerprint;
  l.block_bytes = BlockPool::BlockBytes(PoolOptionsOf(l));
  return l;
}

Status ConvertBlockPayload(const BlockLayout& from, const void* src, const BlockLayout& to, void* dst) {
  if (!SameShape(from, to)) return InvalidArgument("KV block conversion: the layouts differ in more than the KV type");
  const BlockRegions in = BlockPool::Regions(PoolOptionsOf(from));
  const BlockRegions out = BlockPool::Regions(PoolOptionsOf(to));
  if (in.block_bytes == 0 || out.block_bytes == 0 || in.block_bytes != from.block_bytes ||
      out.block_bytes != to.block_bytes) {
    return InvalidArgument("KV block conversion: invalid layout");
  }
  if (from.type == to.type) {
    std::memcpy(dst, src, static_cast<size_t>(from.block_bytes));
    return Status::Ok();
  }
  std::memset(dst, 0, static_cast<size_t>(to.block_bytes));  // alignment padding stays defined
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const int32_t bs = from.block_size;
  const bool in_scaled = kernels::KvTypeHasScales(from.type);
  const bool out_scaled = kernels::KvTypeHasScales(to.type);
  const int64_t in_elem = kernels::KvTypeSize(from.type);
  const int64_t out_elem = kernels::KvTypeSize(to.type);
  std::vector<float> row;
  for (size_t l = 0; l < from.layers.size(); ++l) {
    const KvLayerWidths& w = from.layers[l];
    const int heads = w.n_head_kv;
    for (int kv = 0; kv < 2; ++kv) {
      const int64_t width = kv == 0 ? w.k : w.v;
      if (width == 0) continue;  // a layer without V (MLA latent)
      const int64_t head_dim = width / heads;
      row.resize(static_cast<size_t>(width));
      const int64_t in_region = kv == 0 ? in.k_offset[l] : in.v_offset[l];
      const int64_t out_region = kv == 0 ? out.k_offset[l] : out.v_offset[l];
      // Scales: [heads][bs] bytes, K's then V's (BlockPool layout).
      const int64_t scale_skip = kv == 0 ? 0 : int64_t{heads} * bs;
      for (int32_t p = 0; p < bs; ++p) {
        const uint8_t* in_row = s + in_region + p * width * in_elem;
        if (in_scaled) {
          const uint8_t* sc = s + in.scale_offset[l] + scale_skip;
          for (int h = 0; h < heads; ++h) {
            kernels::LoadKvRow(in_row + h * head_dim, head_dim, from.type, kernels::KvScaleValue(sc[h * bs + p]),
                               row.data() + h * head_dim);
          }
        } else {
          kernels::LoadKvRow(in_row, width, from.type, 1.0f, row.data());
        }
        uint8_t* out_row = d + out_region + p * width * out_elem;
        if (out_scaled) {
          uint8_t* sc = d + out.scale_offset[l] + scale_skip + p;
          kernels::StoreKvRowQuantized(row.data(), heads, static_cast<int>(head_dim), to.type, out_row, sc, bs);
        } else {
          kernels::StoreKvRow(row.data(), width, to.type, out_row);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace pagoda::kv
