#include "model/paged_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace pagoda {
namespace {

int32_t CeilDiv(int32_t a, int32_t b) { return (a + b - 1) / b; }

kv::BlockPoolOptions PoolOptions(const KvCacheSpec& spec, KvType type, int32_t block_size) {
  kv::BlockPoolOptions po;
  for (const KvLayerSpec& l : spec.layers) po.layers.push_back(kv::KvLayerWidths{l.k_width(), l.v_width(), l.n_head_kv});
  po.type = type;
  po.block_size = block_size;
  return po;
}

}  // namespace

int64_t PagedKvCache::BlockBytes(const KvCacheSpec& spec, KvType type, int32_t block_size) {
  return kv::BlockPool::BlockBytes(PoolOptions(spec, type, block_size));
}

Result<std::unique_ptr<PagedKvCache>> PagedKvCache::Create(const KvCacheSpec& spec,
                                                           const PagedKvCacheOptions& options) {
  if (spec.layers.empty()) return InvalidArgument("KV cache spec has no layers");
  if (options.n_seq_max < 1 || options.n_ctx < 1) {
    return InvalidArgument("KV cache needs n_seq_max >= 1 and n_ctx >= 1, got " +
                           std::to_string(options.n_seq_max) + " and " + std::to_string(options.n_ctx));
  }
  for (const KvLayerSpec& l : spec.layers) {
    if (l.n_head_kv < 1 || l.head_dim_k < 1 || l.head_dim_v < 0) {
      return InvalidArgument("KV cache layer spec has non-positive dimensions");
    }
  }
  kv::BlockPoolOptions po = PoolOptions(spec, options.type, options.block_size);
  po.memory_bytes = options.memory_bytes;
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<kv::BlockPool> pool, kv::BlockPool::Create(po));

  auto cache = std::unique_ptr<PagedKvCache>(new PagedKvCache());
  cache->spec_ = spec;
  cache->n_ctx_ = options.n_ctx;
  cache->pool_ = std::move(pool);
  cache->prefix_ = std::make_unique<kv::PrefixCache>(*cache->pool_, options.prefix_caching);
  if (!options.offload_dir.empty()) {
    if (!options.prefix_caching) return InvalidArgument("the KV offload tier needs prefix caching");
    kv::DiskTierOptions d;
    d.dir = options.offload_dir;
    d.max_bytes = options.offload_disk_bytes;
    d.layout.model_fingerprint = options.model_fingerprint;
    d.layout.layers = po.layers;
    d.layout.type = po.type;
    d.layout.block_size = po.block_size;
    d.layout.block_bytes = cache->pool_->block_bytes();
    auto disk = kv::DiskTier::Open(d);
    if (!disk.ok()) return disk.status().WithContext("KV offload disk tier");
    cache->disk_ = std::move(disk).value();
    PagedKvCache* c = cache.get();
    // Only copies: DiskTier::Put queues, and drops when the queue is full.
    cache->prefix_->SetEvictHook([c](const kv::EvictedBlock& e) { c->Offload(e, /*wait=*/false); });
  }
  cache->seqs_.resize(options.n_seq_max);
  for (Sequence& s : cache->seqs_) {
    s.k_blocks.resize(spec.layers.size());
    s.v_blocks.resize(spec.layers.size());
    s.k_scales.resize(spec.layers.size());
    s.v_scales.resize(spec.layers.size());
  }
  cache->new_length_.resize(options.n_seq_max);
  cache->integrity_ = kv::MakeIntegrityTracker(options.integrity, options.n_seq_max);
  for (const Sequence& s : cache->seqs_) cache->tables_.push_back(&s.table);
  return cache;
}

int32_t PagedKvCache::capacity() const {
  return static_cast<int32_t>(std::min<int64_t>(n_ctx_, int64_t{pool_->n_available()} * block_size()));
}

int32_t PagedKvCache::SequenceLength(int32_t seq) const {
  return seq >= 0 && seq < n_seq_max() ? seqs_[seq].length : 0;
}

int32_t PagedKvCache::BlocksToGrow(int32_t seq, int32_t n_pos) const {
  return std::max(0, CeilDiv(n_pos, block_size()) - seqs_[CheckedSeq(seq)].table.size());
}

void PagedKvCache::AppendBlock(Sequence& s, kv::BlockId b) {
  s.table.Append(b, pool_->integrity_tag(b));
  integrity_->OnAppend(SeqId(s), b, pool_->integrity_tag(b));
  for (int l = 0; l < pool_->n_layers(); ++l) {
    s.k_blocks[l].push_back(pool_->k(b, l));
    s.v_blocks[l].push_back(pool_->v(b, l));
    if (kernels::KvTypeHasScales(type())) {
      s.k_scales[l].push_back(pool_->k_scales(b, l));
      s.v_scales[l].push_back(pool_->v_scales(b, l));
    }
  }
}

void PagedKvCache::ReplaceBlock(Sequence& s, int32_t i, kv::BlockId b) {
  SetEntry(s, i, b, pool_->integrity_tag(b));
  integrity_->OnReplace(SeqId(s), i, b, pool_->integrity_tag(b));
}

void PagedKvCache::SetEntry(Sequence& s, int32_t i, kv::BlockId b, uint32_t tag) {
  s.table.Replace(i, b, tag);
  for (int l = 0; l < pool_->n_layers(); ++l) {
    s.k_blocks[l][i] = pool_->k(b, l);
    s.v_blocks[l][i] = pool_->v(b, l);
    if (kernels::KvTypeHasScales(type())) {
      s.k_scales[l][i] = pool_->k_scales(b, l);
      s.v_scales[l][i] = pool_->v_scales(b, l);
    }
  }
}

Status PagedKvCache::Prepare(const Batch& batch) {
  // Validate and count blocks before taking any, so a failed Prepare changes nothing.
  const int32_t n_seq = n_seq_max();
  const int32_t bs = block_size();
  for (int32_t s = 0; s < n_seq; ++s) new_length_[s] = seqs_[s].length;
  for (int64_t i = 0; i < batch.size(); ++i) {
    const int32_t seq = batch.seq_ids[i];
    const int32_t pos = batch.positions[i];
    if (seq < 0 || seq >= n_seq) {
      return InvalidArgument("token " + std::to_string(i) + ": sequence id " + std::to_string(seq) +
                             " outside [0, " + std::to_string(n_seq) + ")");
    }
    if (pos < 0 || pos > new_length_[seq]) {
      return InvalidArgument("token " + std::to_string(i) + ": position " + std::to_string(pos) +
                             " of sequence " + std::to_string(seq) + " leaves a gap (sequence has " +
                             std::to_string(new_length_[seq]) + " positions)");
    }
    if (pos >= n_ctx_) {
      return ResourceExhausted("sequence " + std::to_string(seq) + " is full (" + std::to_string(n_ctx_) +
                               " positions)");
    }
    if (pos == new_length_[seq]) ++new_length_[seq];
  }
  // A write into a block the sequence already has must not change a block that
  // is shared (copy it) or registered in the prefix cache (unregister it).
  rewrites_.clear();
  for (int64_t i = 0; i < batch.size(); ++i) {
    const Sequence& s = seqs_[batch.seq_ids[i]];
    const int32_t bi = batch.positions[i] / bs;
    if (bi < s.table.size() && (pool_->ref_count(s.table[bi]) > 1 || pool_->cached(s.table[bi]))) {
      rewrites_.emplace_back(batch.seq_ids[i], bi);
    }
  }
  std::sort(rewrites_.begin(), rewrites_.end());
  rewrites_.erase(std::unique(rewrites_.begin(), rewrites_.end()), rewrites_.end());
  int64_t need = 0;
  for (const auto& [seq, bi] : rewrites_) need += pool_->ref_count(seqs_[seq].table[bi]) > 1;
  for (int32_t s = 0; s < n_seq; ++s) {
    need += std::max(0, CeilDiv(new_length_[s], bs) - seqs_[s].table.size());
  }
  if (need > pool_->n_available()) {
    return ResourceExhausted("KV cache is full: the step needs " + std::to_string(need) + " blocks, " +
                             std::to_string(pool_->n_available()) + " are free");
  }
  PrivatizeRewrites();
  for (int32_t i = 0; i < n_seq; ++i) {
    Sequence& s = seqs_[i];
    while (s.table.size() < CeilDiv(new_length_[i], bs)) {
      const kv::BlockId b = pool_->Allocate();
      PAGODA_CHECK(b != kv::kNoBlock);  // counted above
      AppendBlock(s, b);
    }
    s.length = new_length_[i];
  }
  return Status::Ok();
}

void PagedKvCache::PrivatizeRewrites() {
  for (const auto& [seq, bi] : rewrites_) {
    Sequence& s = seqs_[seq];
    const kv::BlockId old = s.table[bi];
    if (pool_->ref_count(old) > 1) {
      const kv::BlockId copy = pool_->Allocate();
      PAGODA_CHECK(copy != kv::kNoBlock);  // counted by Prepare
      std::memcpy(pool_->data(copy), pool_->data(old), static_cast<size_t>(pool_->block_bytes()));
      pool_->Release(old);
      ReplaceBlock(s, bi, copy);
    } else {
      prefix_->Forget(old);
    }
    if (static_cast<int32_t>(s.hashes.size()) > bi) s.hashes.resize(bi);
  }
}

void PagedKvCache::Write(bool is_k, int layer, int32_t seq, int32_t pos, const float* row) {
  const Sequence& s = seqs_[seq];
  PAGODA_CHECK(pos >= 0 && pos < s.length) << "write of unprepared position " << pos;
  const int32_t bs = block_size();
  const KvLayerSpec& l = spec_.layers[layer];
  const int64_t width = is_k ? l.k_width() : l.v_width();
  const kv::BlockId b = s.table[pos / bs];
  char* region = static_cast<char*>(is_k ? pool_->k(b, layer) : pool_->v(b, layer));
  if (kernels::KvTypeHasScales(type())) {
    uint8_t* scales = (is_k ? pool_->k_scales(b, layer) : pool_->v_scales(b, layer)) + pos % bs;
    kernels::StoreKvRowQuantized(row, l.n_head_kv, is_k ? l.head_dim_k : l.head_dim_v, type(),
                                 reinterpret_cast<uint8_t*>(region) + (pos % bs) * width, scales, bs);
    return;
  }
  kernels::StoreKvRow(row, width, type(), region + (pos % bs) * width * kernels::KvTypeSize(type()));
}

void PagedKvCache::WriteK(int layer, int32_t seq, int32_t pos, const float* row) { Write(true, layer, seq, pos, row); }

void PagedKvCache::WriteV(int layer, int32_t seq, int32_t pos, const float* row) {
  if (spec_.layers[layer].head_dim_v == 0) return;
  Write(false, layer, seq, pos, row);
}

kernels::KvView PagedKvCache::View(int layer, int32_t seq) const {
  const Sequence& s = seqs_[seq];
  const KvLayerSpec& l = spec_.layers[layer];
  kernels::KvView v;
  v.type = type();
  v.k_blocks = s.k_blocks[layer].data();
  v.v_blocks = s.v_blocks[layer].data();
  v.block_size = block_size();
  v.k_pos_stride = l.k_width();
  v.k_head_stride = l.head_dim_k;
  v.v_pos_stride = l.v_width();
  v.v_head_stride = l.head_dim_v;
  if (kernels::KvTypeHasScales(type())) {
    v.k_scales = s.k_scales[layer].data();
    v.v_scales = s.v_scales[layer].data();
  }
  return v;
}

void PagedKvCache::Truncate(int32_t seq, int32_t n_pos) {
  PAGODA_CHECK(seq >= 0 && seq < n_seq_max() && n_pos >= 0);
  Sequence& s = seqs_[seq];
  if (n_pos >= s.length) return;
  const int32_t bs = block_size();
  const int32_t keep = CeilDiv(n_pos, bs);
  for (int32_t i = s.table.size() - 1; i >= keep; --i) pool_->Release(s.table[i]);
  s.table.Resize(keep);
  integrity_->OnTruncate(seq, keep);
  for (int l = 0; l < pool_->n_layers(); ++l) {
    s.k_blocks[l].resize(keep);
    s.v_blocks[l].resize(keep);
    if (kernels::KvTypeHasScales(type())) {
      s.k_scales[l].resize(keep);
      s.v_scales[l].resize(keep);
    }
  }
  if (static_cast<int32_t>(s.hashes.size()) > n_pos / bs) s.hashes.resize(n_pos / bs);
  s.length = n_pos;
}

int32_t PagedKvCache::AdoptPrefix(int32_t seq, std::span<const int32_t> tokens, std::string_view salt,
                                  int32_t keep_available) {
  Sequence& s = seqs_[CheckedSeq(seq)];
  PAGODA_CHECK(s.length == 0 && s.table.empty()) << "AdoptPrefix on sequence " << seq << " that holds positions";
  if (!prefix_->enabled()) return 0;
  const int32_t bs = block_size();
  const int64_t n = static_cast<int64_t>(tokens.size());
  // The last token is always computed: its logits are what the step is for.
  const int32_t max_blocks = static_cast<int32_t>(std::min<int64_t>(n > 0 ? (n - 1) / bs : 0, n_ctx_ / bs));
  adopt_blocks_.clear();
  adopt_hashes_.clear();
  const int32_t k = prefix_->Lookup(tokens, salt, max_blocks, &adopt_blocks_, &adopt_hashes_);
  for (int32_t i = 0; i < k; ++i) {
    pool_->Acquire(adopt_blocks_[i]);
    AppendBlock(s, adopt_blocks_[i]);
  }
  s.hashes.assign(adopt_hashes_.begin(), adopt_hashes_.end());
  const int32_t restored = disk_ && k < max_blocks ? RestoreFromDisk(s, tokens, salt, k, max_blocks, keep_available) : 0;
  s.length = (k + restored) * bs;
  prefix_->RecordQuery(n, int64_t{k} * bs);
  return s.length;
}

bool PagedKvCache::Offload(const kv::EvictedBlock& e, bool wait) {
  // The tokens must hash to the block (a block registered without its
  // tokens is not offered).
  if (e.tokens.empty() || prefix_->hasher().Next(e.parent, e.tokens) != e.hash) return false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (disk_->Put(e.hash, e.parent, e.tokens, pool_->data(e.block))) {
      ++offload_stats_.offered_blocks;
      return true;
    }
    if (!wait || disk_->Contains(e.hash)) return false;
    disk_->Flush();  // the queue was full: make room, then once more
  }
  return false;
}

int32_t PagedKvCache::OffloadCachedBlocks() {
  if (!disk_) return 0;
  int32_t n = 0;
  kv::EvictedBlock e;
  for (kv::BlockId b = 0; b < pool_->n_blocks(); ++b) {
    if (prefix_->Describe(b, &e) && !disk_->Contains(e.hash)) n += Offload(e, /*wait=*/true);
  }
  return n;
}

int32_t PagedKvCache::RestoreFromDisk(Sequence& s, std::span<const int32_t> tokens, std::string_view salt, int32_t k,
                                      int32_t max_blocks, int32_t keep_available) {
  const int32_t bs = block_size();
  kv::BlockHasher& hasher = prefix_->hasher();
  kv::BlockHash parent = k > 0 ? s.hashes.back() : hasher.Root(salt);
  int32_t restored = 0;
  for (int32_t i = k; i < max_blocks; ++i) {
    const std::span<const int32_t> block_tokens = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    const kv::BlockHash h = hasher.Next(parent, block_tokens);
    if (pool_->n_available() <= keep_available || !disk_->Contains(h)) break;
    const kv::BlockId b = pool_->Allocate();
    if (b == kv::kNoBlock) break;
    auto rec = disk_->Get(h, pool_->data(b));
    // The record names its chain: a hash collision or a stray file must not
    // hand another prefix's KV to this one.
    if (!rec.ok() || rec->parent != parent ||
        !std::equal(block_tokens.begin(), block_tokens.end(), rec->tokens.begin(), rec->tokens.end())) {
      pool_->Release(b);
      ++offload_stats_.restore_failures;
      break;
    }
    AppendBlock(s, b);
    prefix_->Store(h, parent, b, block_tokens, i == 0);
    s.hashes.push_back(h);
    parent = h;
    ++restored;
  }
  offload_stats_.restored_blocks += restored;
  offload_stats_.restored_tokens += int64_t{restored} * bs;
  return restored;
}

int32_t PagedKvCache::CommitBlocks(int32_t seq, std::span<const int32_t> tokens, std::string_view salt) {
  Sequence& s = seqs_[CheckedSeq(seq)];
  if (!prefix_->enabled()) return 0;
  const int32_t bs = block_size();
  const int32_t n_full = static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(tokens.size()), s.length) / bs);
  kv::BlockHasher& hasher = prefix_->hasher();
  kv::BlockHash parent = s.hashes.empty() ? hasher.Root(salt) : s.hashes.back();
  int32_t stored = 0;
  for (int32_t i = static_cast<int32_t>(s.hashes.size()); i < n_full; ++i) {
    const std::span<const int32_t> block_tokens = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    const kv::BlockHash h = hasher.Next(parent, block_tokens);
    stored += prefix_->Store(h, parent, s.table[i], block_tokens, i == 0);
    s.hashes.push_back(h);
    parent = h;
  }
  return stored;
}

}  // namespace pagoda
