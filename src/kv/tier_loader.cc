#include "kv/tier_loader.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include <pthread.h>

namespace pagoda::kv {

struct TierLoader::Impl {
  struct Job {
    uint64_t key = 0;
    uint64_t gen = 0;
    std::vector<int32_t> tokens;
    BlockHash parent;
  };
  struct Entry {
    uint64_t gen = 0;
    State state = State::kPending;
    uint64_t ready_order = 0;
    std::vector<StagedBlock> staged;
  };

  std::vector<KvTier*> tiers;
  TierLoaderOptions options;
  BlockHasher hasher;  // loader thread only
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;
  std::unordered_map<uint64_t, Entry> entries;
  uint64_t next_gen = 1;
  uint64_t next_ready = 1;
  int64_t staged_bytes = 0;  // of ready entries
  bool stop = false;
  TierLoaderStats stats;
  std::thread thread;

  Impl(std::vector<KvTier*> t, TierLoaderOptions o)
      : tiers(std::move(t)), options(o), hasher(o.block_size) {
    thread = std::thread([this] { Run(); });
  }

  bool Live(uint64_t key, uint64_t gen) const {
    auto it = entries.find(key);
    return it != entries.end() && it->second.gen == gen;
  }

  std::vector<std::vector<uint8_t>> spare;  // recycled staging buffers (under mu)

  std::vector<uint8_t> Buffer() {
    {
      std::lock_guard lock(mu);
      if (!spare.empty()) {
        std::vector<uint8_t> b = std::move(spare.back());
        spare.pop_back();
        return b;
      }
    }
    return std::vector<uint8_t>(options.block_bytes);
  }

  // Reads the job's chain; no lock held.
  std::vector<StagedBlock> Load(const Job& job, int64_t* failures) {
    std::vector<StagedBlock> out;
    const size_t bs = static_cast<size_t>(options.block_size);
    const size_t n = job.tokens.size() / bs;
    const size_t cap = std::max<size_t>(1, static_cast<size_t>(options.max_staged_bytes / 2) /
                                               std::max<size_t>(1, options.block_bytes));
    // First the chain as far as the tiers hold it, each block hinted to its
    // tier, then the reads.
    struct Found {
      BlockHash hash;
      size_t tier;
    };
    std::vector<Found> chain;
    BlockHash parent = job.parent;
    for (size_t i = 0; i < n && chain.size() < cap; ++i) {
      const BlockHash h = hasher.Next(parent, std::span<const int32_t>(job.tokens.data() + i * bs, bs));
      const size_t ti = FirstTierHolding(tiers, h);
      if (ti == tiers.size()) break;
      tiers[ti]->WillNeed(h);
      chain.push_back(Found{h, ti});
      parent = h;
    }
    parent = job.parent;
    for (size_t i = 0; i < chain.size(); ++i) {
      const std::span<const int32_t> t(job.tokens.data() + i * bs, bs);
      const BlockHash h = chain[i].hash;
      KvTier* tier = tiers[chain[i].tier];
      StagedBlock b;
      b.hash = h;
      b.parent = parent;
      b.tier = static_cast<int32_t>(chain[i].tier);
      b.payload = Buffer();
      auto rec = tier->Get(h, b.payload.data());
      if (!rec.ok() || !RecordContinues(*rec, parent, t)) {
        ++*failures;
        break;
      }
      out.push_back(std::move(b));
      parent = h;
    }
    return out;
  }

  void Run() {
    pthread_setname_np(pthread_self(), "pagoda-kv-load");
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (stop) return;
      Job job = std::move(queue.front());
      queue.pop_front();
      if (!Live(job.key, job.gen)) continue;  // cancelled or replaced while queued
      lock.unlock();
      const auto t0 = std::chrono::steady_clock::now();
      int64_t failures = 0;
      std::vector<StagedBlock> staged = Load(job, &failures);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      lock.lock();
      stats.seconds += secs;
      stats.failures += failures;
      stats.blocks += static_cast<int64_t>(staged.size());
      stats.bytes += static_cast<int64_t>(staged.size() * options.block_bytes);
      if (!Live(job.key, job.gen)) continue;
      Entry& e = entries[job.key];
      e.state = State::kReady;
      e.ready_order = next_ready++;
      e.staged = std::move(staged);
      staged_bytes += Bytes(e);
      DropOldReady();
    }
  }

  int64_t Bytes(const Entry& e) const { return static_cast<int64_t>(e.staged.size() * options.block_bytes); }

  void Erase(std::unordered_map<uint64_t, Entry>::iterator it) {
    if (it->second.state == State::kReady) staged_bytes -= Bytes(it->second);
    entries.erase(it);
  }

  void DropOldReady() {
    size_t ready = 0;
    for (const auto& [k, e] : entries) ready += e.state == State::kReady;
    while (ready > 1 && (ready > options.max_ready || staged_bytes > options.max_staged_bytes)) {
      auto oldest = entries.end();
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        if (it->second.state == State::kReady &&
            (oldest == entries.end() || it->second.ready_order < oldest->second.ready_order)) {
          oldest = it;
        }
      }
      Erase(oldest);
      ++stats.dropped;
      --ready;
    }
  }
};

TierLoader::TierLoader(std::vector<KvTier*> tiers, TierLoaderOptions options)
    : impl_(std::make_unique<Impl>(std::move(tiers), options)) {}

TierLoader::~TierLoader() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  impl_->thread.join();
}

void TierLoader::Request(uint64_t key, std::span<const int32_t> tokens, const BlockHash& parent) {
  std::lock_guard lock(impl_->mu);
  const uint64_t gen = impl_->next_gen++;
  auto old = impl_->entries.find(key);
  if (old != impl_->entries.end()) impl_->Erase(old);
  impl_->entries[key].gen = gen;
  impl_->queue.push_back(Impl::Job{key, gen, std::vector<int32_t>(tokens.begin(), tokens.end()), parent});
  ++impl_->stats.requests;
  impl_->cv.notify_one();
}

TierLoader::State TierLoader::state(uint64_t key) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->entries.find(key);
  return it == impl_->entries.end() ? State::kNone : it->second.state;
}

std::vector<StagedBlock> TierLoader::Take(uint64_t key) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end() || it->second.state != State::kReady) return {};
  std::vector<StagedBlock> out = std::move(it->second.staged);
  impl_->staged_bytes -= static_cast<int64_t>(out.size() * impl_->options.block_bytes);
  impl_->entries.erase(it);
  return out;
}

void TierLoader::Cancel(uint64_t key) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->entries.find(key);
  if (it != impl_->entries.end()) impl_->Erase(it);
}

size_t TierLoader::pending() const {
  std::lock_guard lock(impl_->mu);
  size_t n = 0;
  for (const auto& [k, e] : impl_->entries) n += e.state == State::kPending;
  return n;
}

void TierLoader::Recycle(std::vector<StagedBlock>&& blocks) {
  std::lock_guard lock(impl_->mu);
  const size_t keep = static_cast<size_t>(impl_->options.max_staged_bytes / 2) /
                      std::max<size_t>(1, impl_->options.block_bytes);
  for (StagedBlock& b : blocks) {
    if (impl_->spare.size() >= keep) break;
    if (b.payload.size() == impl_->options.block_bytes) impl_->spare.push_back(std::move(b.payload));
  }
  blocks.clear();
}

size_t TierLoader::outstanding() const {
  std::lock_guard lock(impl_->mu);
  return impl_->entries.size();
}

TierLoaderStats TierLoader::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

}  // namespace pagoda::kv
