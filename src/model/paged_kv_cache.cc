#include "model/paged_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/redis_tier.h"

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
  cache->layout_.model_fingerprint = options.model_fingerprint;
  cache->layout_.layers = po.layers;
  cache->layout_.type = po.type;
  cache->layout_.block_size = po.block_size;
  cache->layout_.block_bytes = cache->pool_->block_bytes();
  if (!options.offload_dir.empty() || !options.offload_redis_url.empty() || options.offload_memory_bytes > 0) {
    if (!options.prefix_caching) return InvalidArgument("the KV offload tiers need prefix caching");
    const kv::BlockLayout& layout = cache->layout_;
    if (options.offload_memory_bytes > 0) {
      auto memory = kv::MemoryTier::Open(kv::MemoryTierOptions{options.offload_memory_bytes, layout});
      if (!memory.ok()) return memory.status().WithContext("KV offload memory tier");
      cache->memory_ = std::move(memory).value();
      cache->tiers_.push_back(cache->memory_.get());
    }
    if (!options.offload_dir.empty()) {
      kv::DiskTierOptions d;
      d.dir = options.offload_dir;
      d.max_bytes = options.offload_disk_bytes;
      d.layout = layout;
      auto disk = kv::DiskTier::Open(d);
      if (!disk.ok()) return disk.status().WithContext("KV offload disk tier");
      cache->disk_ = std::move(disk).value();
      cache->tiers_.push_back(cache->disk_.get());
    }
    if (!options.offload_redis_url.empty()) {
      kv::RedisTierOptions r;
      r.url = options.offload_redis_url;
      r.layout = layout;
      r.ttl_ms = options.offload_redis_ttl_ms;
      auto redis = kv::RedisTier::Open(r);
      if (!redis.ok()) return redis.status().WithContext("KV offload Redis tier");
      cache->redis_ = std::move(redis).value();
      cache->tiers_.push_back(cache->redis_.get());
    }
    cache->offload_stats_.tier_restored_tokens.assign(cache->tiers_.size(), 0);
    kv::TierLoaderOptions lo;
    lo.block_size = po.block_size;
    lo.block_bytes = cache->pool_->block_bytes();
    cache->loader_ = std::make_unique<kv::TierLoader>(cache->tiers_, lo);
    PagedKvCache* c = cache.get();
    // Only copies: each tier's Put queues, and drops when its queue is full.
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

int32_t PagedKvCache::MaxAdoptBlocks(size_t n_tokens) const {
  // The last token is always computed: its logits are what the step is for.
  const int64_t n = static_cast<int64_t>(n_tokens);
  return static_cast<int32_t>(std::min<int64_t>(n > 0 ? (n - 1) / block_size() : 0, n_ctx_ / block_size()));
}

PagedKvCache::PrefetchState PagedKvCache::PrefetchPrefix(uint64_t key, std::span<const int32_t> tokens,
                                                         std::string_view salt) {
  if (!loader_ || !prefix_->enabled()) return PrefetchState::kNotNeeded;
  switch (loader_->state(key)) {
    case kv::TierLoader::State::kPending:
      return PrefetchState::kPending;
    case kv::TierLoader::State::kReady:
      return PrefetchState::kReady;
    case kv::TierLoader::State::kNone:
      break;
  }
  const int32_t bs = block_size();
  const int32_t max_blocks = MaxAdoptBlocks(tokens.size());
  adopt_blocks_.clear();
  adopt_hashes_.clear();
  const int32_t k = prefix_->Lookup(tokens, salt, max_blocks, &adopt_blocks_, &adopt_hashes_);
  if (k >= max_blocks) return PrefetchState::kNotNeeded;
  kv::BlockHasher& hasher = prefix_->hasher();
  const kv::BlockHash parent = k > 0 ? adopt_hashes_.back() : hasher.Root(salt);
  const std::span<const int32_t> rest = tokens.subspan(static_cast<size_t>(k) * bs, static_cast<size_t>(max_blocks - k) * bs);
  const kv::BlockHash first = hasher.Next(parent, rest.first(bs));
  if (kv::FirstTierHolding(tiers_, first) == tiers_.size()) return PrefetchState::kNotNeeded;
  loader_->Request(key, rest, parent);
  return PrefetchState::kPending;
}

void PagedKvCache::CancelPrefetch(uint64_t key) {
  if (loader_) loader_->Cancel(key);
}

int32_t PagedKvCache::AdoptPrefix(int32_t seq, std::span<const int32_t> tokens, std::string_view salt,
                                  int32_t keep_available, uint64_t prefetch_key) {
  Sequence& s = seqs_[CheckedSeq(seq)];
  PAGODA_CHECK(s.length == 0 && s.table.empty()) << "AdoptPrefix on sequence " << seq << " that holds positions";
  if (!prefix_->enabled()) return 0;
  const int32_t bs = block_size();
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int32_t max_blocks = MaxAdoptBlocks(tokens.size());
  adopt_blocks_.clear();
  adopt_hashes_.clear();
  const int32_t k = prefix_->Lookup(tokens, salt, max_blocks, &adopt_blocks_, &adopt_hashes_);
  for (int32_t i = 0; i < k; ++i) {
    pool_->Acquire(adopt_blocks_[i]);
    AppendBlock(s, adopt_blocks_[i]);
  }
  s.hashes.assign(adopt_hashes_.begin(), adopt_hashes_.end());
  int32_t restored = 0;
  std::vector<kv::StagedBlock> staged;
  if (loader_ && prefetch_key != 0) staged = loader_->Take(prefetch_key);
  if (!tiers_.empty() && k < max_blocks) {
    // A prefetched request takes what the loader staged (it already looked
    // in the tiers: no second lookup or read on this thread); a caller
    // without a prefetch key reads here, synchronously.
    restored = prefetch_key != 0 ? RestoreStaged(s, staged, tokens, salt, max_blocks, keep_available)
                                 : RestoreFromTiers(s, tokens, salt, k, max_blocks, keep_available);
  }
  if (!staged.empty()) loader_->Recycle(std::move(staged));
  s.length = (k + restored) * bs;
  prefix_->RecordQuery(n, int64_t{k} * bs);
  return s.length;
}

int32_t PagedKvCache::ExportBlocks(int32_t seq, int32_t from, std::span<const int32_t> tokens, std::string_view salt,
                                   kv::BlockSink& sink) {
  const Sequence& s = seqs_[CheckedSeq(seq)];
  const int32_t bs = block_size();
  const auto n = static_cast<int32_t>(s.hashes.size());
  int32_t i = std::max(from, 0);
  for (; i < n && int64_t{i + 1} * bs <= static_cast<int64_t>(tokens.size()); ++i) {
    const kv::BlockHash parent = i == 0 ? prefix_->hasher().Root(salt) : s.hashes[i - 1];
    sink.OnBlock(s.hashes[i], parent, tokens.subspan(static_cast<size_t>(i) * bs, bs), pool_->data(s.table[i]));
  }
  return i;
}

bool PagedKvCache::Offload(const kv::EvictedBlock& e, bool wait) {
  // The tokens must hash to the block (a block registered without its
  // tokens is not offered).
  if (e.tokens.empty() || prefix_->hasher().Next(e.parent, e.tokens) != e.hash) return false;
  bool any = false;
  for (kv::KvTier* tier : tiers_) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (tier->Put(e.hash, e.parent, e.tokens, pool_->data(e.block))) {
        ++offload_stats_.offered_blocks;
        any = true;
        if (tier_sink_) {
          tier_sink_(kv::TierEvent{kv::TierEvent::Kind::kStored, kv::MediumOfTier(tier->name()), e.hash, e.parent, e.tokens});
        }
        break;
      }
      if (!wait || tier->Contains(e.hash)) break;
      tier->Flush();  // the queue was full: make room, then once more
    }
  }
  return any;
}

void PagedKvCache::DrainTierEvents() {
  if (!tier_sink_) return;
  for (kv::KvTier* tier : tiers_) {
    tier_removed_.clear();
    tier->TakeRemoved(&tier_removed_);
    for (const kv::BlockHash& h : tier_removed_) {
      tier_sink_(kv::TierEvent{kv::TierEvent::Kind::kRemoved, kv::MediumOfTier(tier->name()), h, {}, {}});
    }
  }
}

int64_t PagedKvCache::AnnounceOpenedBlocks() {
  if (!tier_sink_) return 0;
  int64_t announced = 0;
  const kv::BlockHash root = prefix_->hasher().Root("");
  for (kv::KvTier* tier : tiers_) {
    std::vector<kv::BlockRecord> recs;
    tier->TakeOpened(&recs);
    if (recs.empty()) continue;
    std::unordered_multimap<kv::BlockHash, size_t, kv::BlockHashHasher> children;
    for (size_t i = 0; i < recs.size(); ++i) children.emplace(recs[i].parent, i);
    // Depth first from the root, so a chain's blocks go out one after
    // another (the collector joins them into one BlockStored).
    std::vector<size_t> stack;
    auto push_children = [&](const kv::BlockHash& h) {
      auto [b, e] = children.equal_range(h);
      for (auto it = b; it != e; ++it) stack.push_back(it->second);
    };
    push_children(root);
    const std::string_view medium = kv::MediumOfTier(tier->name());
    // A chain has no cycles (a hash collision could fake one): each record
    // goes out at most once per tier.
    size_t sent = 0;
    while (!stack.empty() && sent < recs.size()) {
      const kv::BlockRecord& r = recs[stack.back()];
      stack.pop_back();
      tier_sink_(kv::TierEvent{kv::TierEvent::Kind::kStored, medium, r.hash, r.parent, r.tokens, r.parent == root});
      ++announced;
      ++sent;
      push_children(r.hash);
    }
  }
  return announced;
}

int32_t PagedKvCache::OffloadCachedBlocks() {
  if (tiers_.empty()) return 0;
  int32_t n = 0;
  kv::EvictedBlock e;
  for (kv::BlockId b = 0; b < pool_->n_blocks(); ++b) {
    if (!prefix_->Describe(b, &e)) continue;
    if (std::all_of(tiers_.begin(), tiers_.end(), [&](const kv::KvTier* t) {
          return t == memory_.get() || t->Contains(e.hash);  // the memory tier ends with the process
        })) {
      continue;
    }
    n += Offload(e, /*wait=*/true);
  }
  return n;
}

int32_t PagedKvCache::RestoreFromTiers(Sequence& s, std::span<const int32_t> tokens, std::string_view salt, int32_t k,
                                      int32_t max_blocks, int32_t keep_available) {
  const int32_t bs = block_size();
  kv::BlockHasher& hasher = prefix_->hasher();
  kv::BlockHash parent = k > 0 ? s.hashes.back() : hasher.Root(salt);
  int32_t restored = 0;
  for (int32_t i = k; i < max_blocks; ++i) {
    const std::span<const int32_t> block_tokens = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    const kv::BlockHash h = hasher.Next(parent, block_tokens);
    if (pool_->n_available() <= keep_available) break;
    const size_t t = kv::FirstTierHolding(tiers_, h);
    if (t == tiers_.size()) break;
    const kv::BlockId b = pool_->Allocate();
    if (b == kv::kNoBlock) break;
    auto rec = tiers_[t]->Get(h, pool_->data(b));
    if (!rec.ok() || !kv::RecordContinues(*rec, parent, block_tokens)) {
      pool_->Release(b);
      ++offload_stats_.restore_failures;
      break;
    }
    AppendBlock(s, b);
    prefix_->Store(h, parent, b, block_tokens, i == 0);
    s.hashes.push_back(h);
    parent = h;
    offload_stats_.tier_restored_tokens[t] += bs;
    ++restored;
  }
  offload_stats_.restored_blocks += restored;
  offload_stats_.restored_tokens += int64_t{restored} * bs;
  return restored;
}

int32_t PagedKvCache::RestoreStaged(Sequence& s, std::vector<kv::StagedBlock>& staged, std::span<const int32_t> tokens,
                                    std::string_view salt, int32_t max_blocks, int32_t keep_available) {
  if (staged.empty()) return 0;
  const int32_t bs = block_size();
  kv::BlockHash parent = s.hashes.empty() ? prefix_->hasher().Root(salt) : s.hashes.back();
  // The pool may hold more of the chain now than when the loader started.
  size_t j = 0;
  while (j < staged.size() && staged[j].parent != parent) ++j;
  int32_t restored = 0;
  for (; j < staged.size(); ++j) {
    const int32_t i = static_cast<int32_t>(s.hashes.size());
    if (i >= max_blocks || staged[j].parent != parent || pool_->n_available() <= keep_available) break;
    const std::span<const int32_t> block_tokens = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    if (prefix_->hasher().Next(parent, block_tokens) != staged[j].hash) break;
    const kv::BlockId b = pool_->Allocate();
    if (b == kv::kNoBlock) break;
    std::memcpy(pool_->data(b), staged[j].payload.data(), staged[j].payload.size());
    AppendBlock(s, b);
    prefix_->Store(staged[j].hash, parent, b, block_tokens, i == 0);
    s.hashes.push_back(staged[j].hash);
    parent = staged[j].hash;
    offload_stats_.tier_restored_tokens[static_cast<size_t>(staged[j].tier)] += bs;
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
