#include "kv/disk_tier.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "kv/write_behind_queue.h"

namespace pagoda::kv {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kExt[] = ".kvb";
constexpr char kTmpExt[] = ".tmp";
// Removed hashes kept for KV events between two TakeRemoved calls.
constexpr size_t kMaxRemovedBacklog = size_t{1} << 16;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

std::string Hex16(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof(s), "%016llx", static_cast<unsigned long long>(v));
  return s;
}

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Writes all of `bytes` to a new file at `path`; false (errno set) on any error.
bool WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return ::close(fd) == 0;
}

// Reads at most `limit` bytes of the file into `out` (resized to what was read).
// The file's whole size goes to `file_size`. False (errno set) on any error.
bool ReadFile(const std::string& path, int64_t limit, std::vector<uint8_t>* out, int64_t* file_size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return false;
  }
  *file_size = st.st_size;
  out->resize(static_cast<size_t>(std::min<int64_t>(limit, st.st_size)));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = ::pread(fd, out->data() + done, out->size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return false;
    }
    if (n == 0) break;  // shrank since fstat
    done += static_cast<size_t>(n);
  }
  out->resize(done);
  ::close(fd);
  return true;
}

}  // namespace

struct DiskTier::Impl {
  struct Indexed {
    BlockHash hash;
    int64_t bytes = 0;
    uint64_t generation = 0;  // tells a rewritten file from the one a Get read
  };
  using Lru = std::list<Indexed>;  // least recently used first

  DiskTierOptions options;
  fs::path dir;  // <options.dir>/<fingerprint hex>
  int64_t record_bytes = 0;

  mutable std::mutex mu;  // the index and the stats; never held while calling the queue
  Lru lru;
  std::unordered_map<BlockHash, Lru::iterator, BlockHashHasher> index;
  int64_t total_bytes = 0;
  uint64_t next_generation = 0;
  std::vector<std::vector<uint8_t>> read_buffers;  // reused by Get, one per concurrent call
  KvTierStats stats;
  int64_t write_errors = 0;
  std::vector<BlockHash> removed;  // unindexed since the last TakeRemoved (bounded)
  std::vector<BlockRecord> opened;  // what Scan indexed, until TakeOpened
  std::vector<uint8_t> write_buffer;  // the writer thread's
  // Last: destroyed (drained, writer joined) before what its writes touch.
  std::unique_ptr<WriteBehindQueue> queue;

  std::string PathOf(const BlockHash& h) const { return (dir / (h.ToHex() + kExt)).string(); }

  // Indexes a file as the most recently used one (replacing its entry if
  // the same block was written again).
  void Insert(const BlockHash& h, int64_t bytes) {
    if (const auto it = index.find(h); it != index.end()) Erase(it->second);
    lru.push_back(Indexed{h, bytes, next_generation++});
    index[h] = std::prev(lru.end());
    total_bytes += bytes;
  }

  // A block that leaves the tier (not a rewrite of the same block).
  void Drop(Lru::iterator it) {
    if (removed.size() < kMaxRemovedBacklog) removed.push_back(it->hash);
    Erase(it);
  }

  void Erase(Lru::iterator it) {
    total_bytes -= it->bytes;
    index.erase(it->hash);
    lru.erase(it);
  }

  // Unindexes least recently used files until the bound holds; returns their paths.
  std::vector<std::string> TakeOverflow() {
    std::vector<std::string> victims;
    while (total_bytes > options.max_bytes && !lru.empty()) {
      victims.push_back(PathOf(lru.front().hash));
      Drop(lru.begin());
      ++stats.deleted;
    }
    return victims;
  }

  static void Remove(const std::string& path) {
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) {
      PAGODA_LOG(Warning) << "KV disk tier: cannot delete " << path << ": " << ec.message();
    }
  }

  Status Scan();
  void Write(const QueuedBlock& b);
  bool WriteRecord(const QueuedBlock& b);
};

Status DiskTier::Impl::Scan() {
  struct Found {
    fs::file_time_type mtime;
    BlockHash hash;
    int64_t bytes;
    BlockRecord rec;
  };
  std::vector<Found> found;
  std::vector<uint8_t> header;
  const int64_t header_bytes = kBlockFileFixedHeader + 4 * int64_t{options.layout.block_size};
  int64_t refused = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path path = it->path();
    const std::string name = path.filename().string();
    std::error_code fec;
    if (!it->is_regular_file(fec)) continue;
    if (EndsWith(name, kTmpExt)) {  // a write cut short by a crash
      Remove(path.string());
      continue;
    }
    if (!EndsWith(name, kExt)) continue;  // not ours
    int64_t size = 0;
    Result<BlockRecord> rec = InvalidArgument("unreadable");
    if (ReadFile(path.string(), header_bytes, &header, &size)) {
      rec = DecodeBlockHeader(options.layout, header);
    }
    const fs::file_time_type mtime = fs::last_write_time(path, fec);
    if (!rec.ok() || size != record_bytes || name != rec->hash.ToHex() + kExt || fec) {
      Remove(path.string());
      ++refused;
      continue;
    }
    found.push_back(Found{mtime, rec->hash, size, std::move(*rec)});
  }
  if (ec) return IoError("KV disk tier: cannot scan " + dir.string() + ": " + ec.message());
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  for (const Found& f : found) Insert(f.hash, f.bytes);
  stats.corrupt += refused;
  for (const std::string& path : TakeOverflow()) Remove(path);
  removed.clear();  // dropped before anyone knew of them: nothing to announce
  for (Found& f : found) {
    if (index.count(f.hash) != 0) opened.push_back(std::move(f.rec));
  }
  if (refused > 0) {
    PAGODA_LOG(Warning) << "KV disk tier: deleted " << refused << " unusable block files";
  }
  PAGODA_LOG(Info) << "KV disk tier: " << index.size() << " blocks (" << (total_bytes >> 20) << " MiB) in "
                   << dir.string();
  return Status::Ok();
}

// No fsync: a file torn by a crash fails its checksum at Get (or its size at
// the next scan) and is dropped, which is all a cache owes.
bool DiskTier::Impl::WriteRecord(const QueuedBlock& b) {
  write_buffer.clear();
  EncodeBlock(options.layout, b.hash, b.parent, b.tokens, b.payload.data(), &write_buffer);
  const std::string hex = b.hash.ToHex();
  const std::string tmp = (dir / ("." + hex + kTmpExt)).string();
  if (WriteFile(tmp, write_buffer) && ::rename(tmp.c_str(), PathOf(b.hash).c_str()) == 0) return true;
  const int err = errno;
  ::unlink(tmp.c_str());
  std::lock_guard<std::mutex> lock(mu);
  if (write_errors++ % 1000 == 0) {  // the first of a run (disk full) and then a sample
    PAGODA_LOG(Warning) << "KV disk tier: cannot write a block to " << dir.string() << ": " << std::strerror(err)
                        << " (" << write_errors << " failed writes)";
  }
  return false;
}

// On the queue's writer thread.
void DiskTier::Impl::Write(const QueuedBlock& b) {
  const Clock::time_point t0 = Clock::now();
  const bool ok = WriteRecord(b);
  const double dt = Seconds(t0);
  std::vector<std::string> victims;
  {
    std::lock_guard<std::mutex> lock(mu);
    stats.write_seconds += dt;
    if (ok) {
      ++stats.writes;
      stats.write_bytes += record_bytes;
      Insert(b.hash, record_bytes);
      victims = TakeOverflow();
    } else if (removed.size() < kMaxRemovedBacklog) {
      removed.push_back(b.hash);  // announced when queued; never stored
    }
  }
  // Unindexed already, so no Get opens them after this; one that has them
  // open keeps reading (POSIX unlink). Deleted before the block leaves the
  // queue, so that Flush returns with the bound applied.
  for (const std::string& path : victims) Remove(path);
}

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const DiskTierOptions& options) {
  if (options.dir.empty()) return InvalidArgument("KV disk tier: no directory");
  if (!TierLayoutValid(options.layout)) return InvalidArgument("KV disk tier: invalid block layout");
  if (options.max_bytes < options.layout.RecordBytes()) {
    return InvalidArgument("KV disk tier: " + std::to_string(options.max_bytes) + " bytes hold no block file of " +
                           std::to_string(options.layout.RecordBytes()) + " bytes");
  }
  if (options.max_queued < 1) return InvalidArgument("KV disk tier: max_queued must be >= 1");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->dir = fs::path(options.dir) / Hex16(options.layout.model_fingerprint);
  impl->record_bytes = options.layout.RecordBytes();
  std::error_code ec;
  fs::create_directories(impl->dir, ec);
  if (ec) return IoError("KV disk tier: cannot create " + impl->dir.string() + ": " + ec.message());
  PAGODA_RETURN_IF_ERROR(impl->Scan());
  Impl* p = impl.get();
  impl->queue = std::make_unique<WriteBehindQueue>("pagoda-kv-disk", options.max_queued,
                                                   [p](const QueuedBlock& b) { p->Write(b); });
  return std::unique_ptr<DiskTier>(new DiskTier(std::move(impl)));
}

DiskTier::DiskTier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DiskTier::~DiskTier() { impl_->queue.reset(); }

const BlockLayout& DiskTier::layout() const { return impl_->options.layout; }

bool DiskTier::Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
                   const void* payload) {
  Impl& m = *impl_;
  PAGODA_CHECK(static_cast<int64_t>(tokens.size()) == m.options.layout.block_size)
      << "a KV block holds " << m.options.layout.block_size << " tokens, got " << tokens.size();
  bool stored = false;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    stored = m.index.count(hash) != 0;
  }
  const auto* bytes = static_cast<const uint8_t*>(payload);
  if (!stored && m.queue->Push(hash, parent, tokens, {bytes, static_cast<size_t>(m.options.layout.block_bytes)})) {
    return true;
  }
  std::lock_guard<std::mutex> lock(m.mu);
  ++m.stats.dropped;
  return false;
}

// The queue before the index (and in Get): the writer indexes a block before
// it leaves the queue, so a block is always found in one or the other.
bool DiskTier::Contains(const BlockHash& hash) const {
  if (impl_->queue->Contains(hash)) return true;
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->index.count(hash) != 0;
}

Result<BlockRecord> DiskTier::Get(const BlockHash& hash, void* payload) {
  Impl& m = *impl_;
  // A queued block is served from its queued copy rather than waiting for
  // the writer (which may have a whole queue ahead of it). It counts as a
  // hit but not in read_bytes / read_seconds, which measure the disk.
  if (std::optional<BlockRecord> queued = m.queue->CopyQueued(hash, payload)) {
    std::lock_guard<std::mutex> lock(m.mu);
    ++m.stats.hits;
    return *std::move(queued);
  }
  std::unique_lock<std::mutex> lock(m.mu);
  const auto found = m.index.find(hash);
  if (found == m.index.end()) {
    ++m.stats.misses;
    return NotFound("KV disk tier: block " + hash.ToHex() + " is not stored");
  }
  m.lru.splice(m.lru.end(), m.lru, found->second);  // most recently used now
  const uint64_t generation = found->second->generation;
  std::vector<uint8_t> buf;
  if (!m.read_buffers.empty()) {
    buf = std::move(m.read_buffers.back());
    m.read_buffers.pop_back();
  }
  lock.unlock();

  const Clock::time_point t0 = Clock::now();
  const std::string path = m.PathOf(hash);
  int64_t size = 0;
  const bool read = ReadFile(path, m.record_bytes, &buf, &size);
  const int err = errno;
  Result<BlockRecord> rec = NotFound("KV disk tier: block " + hash.ToHex() + " is gone");
  if (read && size != m.record_bytes) {
    rec = InvalidArgument("KV block file: " + std::to_string(size) + " bytes, a record has " +
                          std::to_string(m.record_bytes));
  } else if (read) {
    rec = DecodeBlock(m.options.layout, buf, payload);
  } else if (err != ENOENT) {
    rec = IoError("KV disk tier: cannot read block " + hash.ToHex() + ": " + std::strerror(err));
  }
  const double dt = Seconds(t0);

  lock.lock();
  m.read_buffers.push_back(std::move(buf));
  if (rec.ok()) {
    ++m.stats.hits;
    m.stats.read_bytes += size;
    m.stats.read_seconds += dt;
    return rec;
  }
  const auto now = m.index.find(hash);
  const bool same_file = now != m.index.end() && now->second->generation == generation;
  if (rec.status().code() == StatusCode::kNotFound || rec.status().code() == StatusCode::kIoError) {
    // Deleted by the size bound meanwhile (or unreadable): not stored, as far as this Get can tell.
    if (same_file && rec.status().code() == StatusCode::kNotFound) m.Drop(now->second);
    ++m.stats.misses;
    return rec;
  }
  ++m.stats.corrupt;
  // Deleted under the lock: Put refuses an indexed hash, so no rewrite of it can race this.
  if (same_file) {
    m.Drop(now->second);
    Impl::Remove(path);
  }
  PAGODA_LOG(Warning) << "KV disk tier: dropped block " << hash.ToHex() << ": " << rec.status().ToString();
  return rec;
}

void DiskTier::Flush() { impl_->queue->Flush(); }

void DiskTier::WillNeed(const BlockHash& hash) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->index.count(hash) == 0) return;
  }
  const int fd = ::open(impl_->PathOf(hash).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
  ::close(fd);
}

void DiskTier::TakeRemoved(std::vector<BlockHash>* out) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  out->insert(out->end(), impl_->removed.begin(), impl_->removed.end());
  impl_->removed.clear();
}

void DiskTier::TakeOpened(std::vector<BlockRecord>* out) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (BlockRecord& r : impl_->opened) out->push_back(std::move(r));
  impl_->opened.clear();
  impl_->opened.shrink_to_fit();
}

KvTierStats DiskTier::stats() const {
  const int64_t queued = impl_->queue->depth();
  std::lock_guard<std::mutex> lock(impl_->mu);
  KvTierStats s = impl_->stats;
  s.blocks = static_cast<int64_t>(impl_->index.size());
  s.bytes = impl_->total_bytes;
  s.queued = queued;
  return s;
}

}  // namespace pagoda::kv
