#include "kv/disk_tier.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"

namespace pagoda::kv {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kExt[] = ".kvb";
constexpr char kTmpExt[] = ".tmp";
// Popped queue entries kept for Put to reuse: enough for a steady stream,
// without holding a burst's worth of block copies forever.
constexpr size_t kMaxSpare = 4;

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

bool LayoutValid(const BlockLayout& l) {
  BlockPoolOptions po;
  po.layers = l.layers;
  po.type = l.type;
  po.block_size = l.block_size;
  return l.block_bytes > 0 && BlockPool::BlockBytes(po) == l.block_bytes;
}

}  // namespace

struct DiskTier::Impl {
  // A block waiting for the writer. The writer encodes and writes the front
  // entry without the lock and pops it after; nothing else mutates a queued
  // entry, so Get may copy from it under the lock meanwhile.
  struct Entry {
    BlockHash hash;
    BlockHash parent;
    std::vector<int32_t> tokens;
    std::vector<uint8_t> payload;
  };
  struct Indexed {
    BlockHash hash;
    int64_t bytes = 0;
    uint64_t generation = 0;  // tells a rewritten file from the one a Get read
  };
  using Lru = std::list<Indexed>;  // least recently used first

  DiskTierOptions options;
  fs::path dir;  // <options.dir>/<fingerprint hex>
  int64_t record_bytes = 0;

  mutable std::mutex mu;
  std::condition_variable work_cv;  // writer: an entry was queued, or stop
  std::condition_variable done_cv;  // Flush: an entry left the queue
  std::deque<Entry> queue;
  std::vector<Entry> spare;  // popped entries whose buffers Put reuses (kMaxSpare)
  bool stop = false;
  Lru lru;
  std::unordered_map<BlockHash, Lru::iterator, BlockHashHasher> index;
  int64_t total_bytes = 0;
  uint64_t next_generation = 0;
  std::vector<std::vector<uint8_t>> read_buffers;  // reused by Get, one per concurrent call
  DiskTierStats stats;
  int64_t write_errors = 0;
  std::thread writer;

  std::string PathOf(const BlockHash& h) const { return (dir / (h.ToHex() + kExt)).string(); }

  const Entry* FindQueued(const BlockHash& h) const {
    for (const Entry& e : queue) {
      if (e.hash == h) return &e;
    }
    return nullptr;
  }

  // Indexes a file as the most recently used one.
  void Insert(const BlockHash& h, int64_t bytes) {
    lru.push_back(Indexed{h, bytes, next_generation++});
    index[h] = std::prev(lru.end());
    total_bytes += bytes;
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
      Erase(lru.begin());
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
  void WriterLoop();
  bool WriteEntry(const Entry& e, std::vector<uint8_t>* buf);
};

Status DiskTier::Impl::Scan() {
  struct Found {
    fs::file_time_type mtime;
    BlockHash hash;
    int64_t bytes;
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
    found.push_back(Found{mtime, rec->hash, size});
  }
  if (ec) return IoError("KV disk tier: cannot scan " + dir.string() + ": " + ec.message());
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  for (const Found& f : found) Insert(f.hash, f.bytes);
  stats.corrupt += refused;
  for (const std::string& path : TakeOverflow()) Remove(path);
  if (refused > 0) {
    PAGODA_LOG(Warning) << "KV disk tier: deleted " << refused << " unusable block files";
  }
  PAGODA_LOG(Info) << "KV disk tier: " << index.size() << " blocks (" << (total_bytes >> 20) << " MiB) in "
                   << dir.string();
  return Status::Ok();
}

// No fsync: a file torn by a crash fails its checksum at Get (or its size at
// the next scan) and is dropped, which is all a cache owes.
bool DiskTier::Impl::WriteEntry(const Entry& e, std::vector<uint8_t>* buf) {
  buf->clear();
  EncodeBlock(options.layout, e.hash, e.parent, e.tokens, e.payload.data(), buf);
  const std::string hex = e.hash.ToHex();
  const std::string tmp = (dir / ("." + hex + kTmpExt)).string();
  if (WriteFile(tmp, *buf) && ::rename(tmp.c_str(), PathOf(e.hash).c_str()) == 0) return true;
  const int err = errno;
  ::unlink(tmp.c_str());
  std::lock_guard<std::mutex> lock(mu);
  if (write_errors++ % 1000 == 0) {  // the first of a run (disk full) and then a sample
    PAGODA_LOG(Warning) << "KV disk tier: cannot write a block to " << dir.string() << ": " << std::strerror(err)
                        << " (" << write_errors << " failed writes)";
  }
  return false;
}

void DiskTier::Impl::WriterLoop() {
  pthread_setname_np(pthread_self(), "pagoda-kv-disk");
  std::vector<uint8_t> buf;
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    work_cv.wait(lock, [&] { return stop || !queue.empty(); });
    if (queue.empty()) return;  // stopping, and drained
    const Entry& e = queue.front();
    lock.unlock();
    const Clock::time_point t0 = Clock::now();
    const bool ok = WriteEntry(e, &buf);
    const double dt = Seconds(t0);
    lock.lock();
    stats.write_seconds += dt;
    std::vector<std::string> victims;
    if (ok) {
      ++stats.writes;
      stats.write_bytes += record_bytes;
      Insert(e.hash, record_bytes);
      victims = TakeOverflow();
    }
    if (!victims.empty()) {
      // Unindexed already, so no Get opens them after this; one that has
      // them open keeps reading (POSIX unlink). Deleted before the entry
      // leaves the queue, so that Flush returns with the bound applied.
      lock.unlock();
      for (const std::string& path : victims) Remove(path);
      lock.lock();
    }
    if (spare.size() < kMaxSpare) spare.push_back(std::move(queue.front()));
    queue.pop_front();
    done_cv.notify_all();
  }
}

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const DiskTierOptions& options) {
  if (options.dir.empty()) return InvalidArgument("KV disk tier: no directory");
  if (!LayoutValid(options.layout)) return InvalidArgument("KV disk tier: invalid block layout");
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
  impl->writer = std::thread([p] { p->WriterLoop(); });
  return std::unique_ptr<DiskTier>(new DiskTier(std::move(impl)));
}

DiskTier::DiskTier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DiskTier::~DiskTier() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_one();
  impl_->writer.join();
}

const BlockLayout& DiskTier::layout() const { return impl_->options.layout; }

bool DiskTier::Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
                   const void* payload) {
  Impl& m = *impl_;
  PAGODA_CHECK(static_cast<int64_t>(tokens.size()) == m.options.layout.block_size)
      << "a KV block holds " << m.options.layout.block_size << " tokens, got " << tokens.size();
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.index.count(hash) != 0 || m.FindQueued(hash) != nullptr ||
      static_cast<int64_t>(m.queue.size()) >= m.options.max_queued) {
    ++m.stats.dropped;
    return false;
  }
  Impl::Entry e;
  if (!m.spare.empty()) {
    e = std::move(m.spare.back());
    m.spare.pop_back();
  }
  e.hash = hash;
  e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  const auto* bytes = static_cast<const uint8_t*>(payload);
  e.payload.assign(bytes, bytes + m.options.layout.block_bytes);
  m.queue.push_back(std::move(e));
  m.work_cv.notify_one();
  return true;
}

bool DiskTier::Contains(const BlockHash& hash) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->index.count(hash) != 0 || impl_->FindQueued(hash) != nullptr;
}

Result<BlockRecord> DiskTier::Get(const BlockHash& hash, void* payload) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  // A queued block is served from its queued copy rather than waiting for
  // the writer (which may have a whole queue ahead of it). It counts as a
  // hit but not in read_bytes / read_seconds, which measure the disk.
  if (const Impl::Entry* q = m.FindQueued(hash)) {
    std::memcpy(payload, q->payload.data(), q->payload.size());
    ++m.stats.hits;
    return BlockRecord{q->hash, q->parent, q->tokens};
  }
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
    if (same_file && rec.status().code() == StatusCode::kNotFound) m.Erase(now->second);
    ++m.stats.misses;
    return rec;
  }
  ++m.stats.corrupt;
  // Deleted under the lock: Put refuses an indexed hash, so no rewrite of it can race this.
  if (same_file) {
    m.Erase(now->second);
    Impl::Remove(path);
  }
  PAGODA_LOG(Warning) << "KV disk tier: dropped block " << hash.ToHex() << ": " << rec.status().ToString();
  return rec;
}

void DiskTier::Flush() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->done_cv.wait(lock, [&] { return impl_->queue.empty(); });
}

DiskTierStats DiskTier::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  DiskTierStats s = impl_->stats;
  s.blocks = static_cast<int64_t>(impl_->index.size());
  s.bytes = impl_->total_bytes;
  s.queued = static_cast<int64_t>(impl_->queue.size());
  return s;
}

}  // namespace pagoda::kv
