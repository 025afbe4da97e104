// The disk tier's restore speed (issue 17, docs/KV_OFFLOAD.md), warm (the
// block files in the page cache, as right after they were written) and cold
// (their pages dropped with posix_fadvise(DONTNEED) after an fsync, so every
// read goes to the device), beside the device's own sequential read speed
// measured the same way on one large file. Restores run as the engine runs
// them: a chain of blocks read and verified by the TierLoader thread.
//
// Usage: kv_tier_bench [--dir DIR] [--blocks N] [--block-kib K] [--file-mib M] [--reps R]
// Defaults: a temporary directory under /tmp, 512 blocks of 512 KiB (a 1B
// Llama's f16 block of 16 positions: 16 layers x 2 x 8 heads x 64 x 16 x 2
// bytes), a 1 GiB file, 3 repetitions (medians printed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "kv/block_hash.h"
#include "kv/disk_tier.h"
#include "kv/tier_loader.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using pagoda::kv::BlockHash;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Drops the page-cache pages of every regular file under `dir` (or the file).
void DropCache(const fs::path& p) {
  auto drop = [](const fs::path& f) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  };
  if (fs::is_regular_file(p)) {
    drop(p);
    return;
  }
  for (const auto& e : fs::recursive_directory_iterator(p)) {
    if (e.is_regular_file()) drop(e.path());
  }
}

// Sequential read of `path` in 4 MiB reads; bytes per second.
double ReadFile(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::vector<char> buf(size_t{4} << 20);
  size_t total = 0;
  const auto t0 = Clock::now();
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    total += static_cast<size_t>(n);
  }
  const double s = Since(t0);
  ::close(fd);
  return static_cast<double>(total) / s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int blocks = 512, block_kib = 512, file_mib = 1024, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--dir") dir = argv[i + 1];
    else if (a == "--blocks") blocks = std::atoi(argv[i + 1]);
    else if (a == "--block-kib") block_kib = std::atoi(argv[i + 1]);
    else if (a == "--file-mib") file_mib = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (blocks <= 0 || block_kib <= 0 || file_mib <= 0 || reps <= 0) {
    std::fprintf(stderr, "counts must be positive\n");
    return 2;
  }
  const fs::path root = dir.empty() ? fs::temp_directory_path() / ("pagoda_kv_tier_bench_" + std::to_string(::getpid()))
                                    : fs::path(dir);
  fs::create_directories(root);

  // A layout of one layer whose K and V rows make a block of block_kib KiB (f16).
  pagoda::kv::BlockLayout layout;
  layout.model_fingerprint = 0xbe9c;
  layout.block_size = 16;
  layout.type = pagoda::kernels::KvType::kF16;
  const int width = block_kib * 1024 / (2 * 2 * layout.block_size);  // K and V, 2 bytes each
  layout.layers = {{width, width, 1}};
  pagoda::kv::BlockPoolOptions po;
  po.layers = layout.layers;
  po.type = layout.type;
  po.block_size = layout.block_size;
  layout.block_bytes = pagoda::kv::BlockPool::BlockBytes(po);

  pagoda::kv::DiskTierOptions o;
  o.dir = (root / "tier").string();
  o.layout = layout;
  o.max_bytes = int64_t{blocks + 8} * layout.RecordBytes();
  o.max_queued = 8;
  auto tier = pagoda::kv::DiskTier::Open(o);
  if (!tier.ok()) {
    std::fprintf(stderr, "%s\n", tier.status().ToString().c_str());
    return 1;
  }
  pagoda::kv::DiskTier& disk = **tier;

  // One chain of `blocks` blocks, written through the tier.
  std::vector<int32_t> tokens(static_cast<size_t>(blocks) * layout.block_size);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i % 32000);
  pagoda::kv::BlockHasher hasher(layout.block_size);
  const BlockHash root_hash = hasher.Root("");
  BlockHash parent = root_hash;
  std::vector<uint8_t> payload(layout.block_bytes);
  const auto tw = Clock::now();
  for (int b = 0; b < blocks; ++b) {
    for (size_t j = 0; j < payload.size(); j += 64) payload[j] = static_cast<uint8_t>(b + j);
    const std::span<const int32_t> t(tokens.data() + static_cast<size_t>(b) * layout.block_size, layout.block_size);
    const BlockHash h = hasher.Next(parent, t);
    while (!disk.Put(h, parent, t, payload.data())) std::this_thread::sleep_for(std::chrono::microseconds(100));
    parent = h;
  }
  disk.Flush();
  const double write_s = Since(tw);
  const double bytes = static_cast<double>(blocks) * static_cast<double>(layout.block_bytes);

  pagoda::kv::TierLoaderOptions lo;
  lo.block_size = layout.block_size;
  lo.block_bytes = layout.block_bytes;
  lo.max_staged_bytes = static_cast<int64_t>(bytes) * 2 + 1;
  pagoda::kv::TierLoader loader({&disk}, lo);
  auto restore = [&](bool cold) {
    if (cold) DropCache(root / "tier");
    const auto t0 = Clock::now();
    loader.Request(1, tokens, root_hash);
    while (loader.state(1) == pagoda::kv::TierLoader::State::kPending) std::this_thread::sleep_for(std::chrono::microseconds(50));
    std::vector<pagoda::kv::StagedBlock> staged = loader.Take(1);
    const double s = Since(t0);
    const size_t n = staged.size();
    loader.Recycle(std::move(staged));  // as the engine does after copying them into the pool
    if (n != static_cast<size_t>(blocks)) {
      std::fprintf(stderr, "restored %zu of %d blocks\n", n, blocks);
      std::exit(1);
    }
    return bytes / s;
  };

  // The device: one file of file_mib MiB, written and synced, then read cold.
  const fs::path big = root / "sequential.bin";
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    std::vector<char> buf(size_t{4} << 20, 'x');
    for (int i = 0; i < file_mib / 4; ++i) {
      if (::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) break;
    }
    ::fsync(fd);
    ::close(fd);
  }
  std::vector<double> warm, cold, device;
  restore(false);  // first touch
  for (int r = 0; r < reps; ++r) {
    warm.push_back(restore(false));
    cold.push_back(restore(true));
    DropCache(big);
    device.push_back(ReadFile(big));
  }
  std::printf("{\"blocks\": %d, \"block_bytes\": %zu, \"record_bytes\": %lld, \"write_gb_per_s\": %.3f,\n"
              " \"restore_warm_gb_per_s\": %.3f, \"restore_cold_gb_per_s\": %.3f, \"device_sequential_gb_per_s\": %.3f,\n"
              " \"cold_over_device\": %.3f, \"reps\": %d}\n",
              blocks, layout.block_bytes, static_cast<long long>(layout.RecordBytes()), bytes / write_s / 1e9,
              Median(warm) / 1e9, Median(cold) / 1e9, Median(device) / 1e9, Median(cold) / Median(device), reps);
  tier->reset();
  if (dir.empty()) fs::remove_all(root);
  return 0;
}
