// Prefill -> decode KV transfer throughput on loopback (issue 17: "KV
// transfer between the pair reaches at least 1 GB/s on loopback";
// docs/KV_OFFLOAD.md). A KvTransferSender streams a chain of block records
// to a KvTransferReceiver on 127.0.0.1 through the same code a prefill and a
// decode replica run: the engine thread's OnBlock (encode + checksum), the
// sender thread's writes, the receiver's reads, verification (checksum,
// chain hash) and the memory tier's insert; timed from the first OnBlock to
// the acknowledgement. Also with f16 -> fp8_e4m3 conversion on arrival, and
// that conversion alone (kv::ConvertBlockPayload) on the active ISA.
//
// Usage: kv_transfer_bench [--blocks N] [--reps R]
// Defaults: 256 blocks of a 1B Llama's f16 block of 16 positions (16 layers
// x (K, V) x 8 heads x 64 x 16 x 2 bytes = 512 KiB), 5 repetitions (median).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kv/block_convert.h"
#include "kv/block_hash.h"
#include "kv/memory_tier.h"
#include "kvtransfer/kv_transfer_receiver.h"
#include "kvtransfer/kv_transfer_sender.h"
#include "kvtransfer/transfer_inbox.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace kv = pagoda::kv;
namespace kvt = pagoda::kvtransfer;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

kv::BlockLayout Layout(pagoda::kernels::KvType type) {
  kv::BlockLayout l;
  l.model_fingerprint = 0x5eed;
  l.layers.assign(16, kv::KvLayerWidths{512, 512, 8});
  l.block_size = 16;
  return kv::LayoutWithType(l, type, l.model_fingerprint);
}

// GB/s of block records (as the sender counts them) for one transfer per rep.
double Run(pagoda::kernels::KvType from, pagoda::kernels::KvType to, int n_blocks, int reps) {
  const kv::BlockLayout src = Layout(from);
  const kv::BlockLayout dst = Layout(to);
  auto tier = kv::MemoryTier::Open(kv::MemoryTierOptions{dst.RecordBytes() * (n_blocks + 1), dst});
  if (!tier.ok()) std::abort();
  kvt::TransferInbox inbox(**tier, {dst.model_fingerprint});
  kvt::KvTransferReceiverOptions ro;
  ro.listen = kvt::HostPort{"127.0.0.1", 0};
  auto receiver = kvt::KvTransferReceiver::Start(ro, inbox);
  if (!receiver.ok()) std::abort();
  // Payload: random f16 in a sane range (a converted block must have finite rows).
  std::vector<uint8_t> payload(static_cast<size_t>(src.block_bytes));
  std::mt19937 rng(7);
  auto* h = reinterpret_cast<uint16_t*>(payload.data());
  for (size_t i = 0; i < payload.size() / 2; ++i) h[i] = static_cast<uint16_t>(0x3000 + rng() % 0x0c00);
  std::vector<double> gbps;
  for (int r = 0; r < reps; ++r) {
    kv::BlockHasher hasher(16);
    kv::BlockHash parent = hasher.Root("rep" + std::to_string(r));
    kvt::KvTransferSenderOptions so;
    so.to = kvt::HostPort{"127.0.0.1", (*receiver)->port()};
    so.transfer_id = "bench" + std::to_string(r);
    so.layout = src;
    auto sender = kvt::KvTransferSender::Start(so);
    if (!sender.ok()) std::abort();
    std::vector<int32_t> tokens(16);
    const auto t0 = Clock::now();
    for (int b = 0; b < n_blocks; ++b) {
      for (int i = 0; i < 16; ++i) tokens[i] = b * 16 + i;
      const kv::BlockHash hash = hasher.Next(parent, tokens);
      (*sender)->OnBlock(hash, parent, tokens, payload.data());
      parent = hash;
    }
    const kvt::KvTransferResult res = (*sender)->Finish();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!res.status.ok() || res.kept != n_blocks) {
      std::fprintf(stderr, "transfer failed: %s\n", res.status.ToString().c_str());
      std::exit(1);
    }
    gbps.push_back(static_cast<double>(res.bytes) / s / 1e9);
  }
  return Median(gbps);
}

// GB/s of f16 payload through ConvertBlockPayload alone (no sockets, no
// checksums), on the active ISA (PAGODA_ISA selects another).
double ConvertOnly(int n_blocks, int reps) {
  using pagoda::kernels::KvType;
  const kv::BlockLayout src = Layout(KvType::kF16);
  const kv::BlockLayout dst = Layout(KvType::kFp8E4M3);
  std::vector<uint8_t> in(static_cast<size_t>(src.block_bytes) * n_blocks), out(static_cast<size_t>(dst.block_bytes));
  std::mt19937 rng(7);
  auto* h = reinterpret_cast<uint16_t*>(in.data());
  for (size_t i = 0; i < in.size() / 2; ++i) h[i] = static_cast<uint16_t>(0x3000 + rng() % 0x0c00);
  std::vector<double> gbps;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    for (int b = 0; b < n_blocks; ++b) {
      if (!kv::ConvertBlockPayload(src, in.data() + static_cast<size_t>(b) * src.block_bytes, dst, out.data()).ok()) {
        std::abort();
      }
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    gbps.push_back(static_cast<double>(in.size()) / s / 1e9);
  }
  return Median(gbps);
}

}  // namespace

int main(int argc, char** argv) {
  int blocks = 256, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--blocks") == 0) blocks = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  }
  if (blocks < 1 || reps < 1) return 2;
  using pagoda::kernels::KvType;
  const double same = Run(KvType::kF16, KvType::kF16, blocks, reps);
  const double conv = Run(KvType::kF16, KvType::kFp8E4M3, blocks, reps);
  std::printf("blocks %d x %.0f KiB, median of %d\n", blocks, Layout(KvType::kF16).block_bytes / 1024.0, reps);
  std::printf("f16 -> f16 (kept as received)   %.2f GB/s\n", same);
  std::printf("f16 -> fp8_e4m3 (converted)     %.2f GB/s\n", conv);
  std::printf("conversion alone (%s): %.2f GB/s of f16\n",
              pagoda::kernels::IsaName(pagoda::kernels::ActiveIsa()), ConvertOnly(blocks, reps));
  return 0;
}
