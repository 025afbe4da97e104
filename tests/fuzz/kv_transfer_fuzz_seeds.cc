// Writes kv_transfer_fuzz's seed corpus into the directory given as argv[1]:
// raw valid streams (first byte 0) from every writer KV type and both
// accepted fingerprints, an empty one, and the built-stream cases (first
// byte odd) unmutated, so the fuzzer starts from accepted transfers.
#include <cstdio>
#include <string>
#include <vector>

#include "kv_transfer_fuzz_streams.h"

using namespace pagoda::kvtransfer;
using namespace pagoda::kvtransfer::fuzzing;

namespace {

bool Write(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = true;
  for (int t = 0; t < 5; ++t) {
    for (int fp = 0; fp < 2; ++fp) {
      const pagoda::kv::BlockLayout writer = WriterLayout(t, fp == 1);
      std::vector<testing::ChainBlock> chain = WriterChain(writer);
      chain.resize(t == 0 && fp == 0 ? 3 : 1);
      std::vector<uint8_t> raw = {0};
      const std::vector<uint8_t> s = testing::Stream(writer, chain, "seed-" + std::to_string(t));
      raw.insert(raw.end(), s.begin(), s.end());
      ok &= Write(dir, "raw_" + std::to_string(t) + "_" + std::to_string(fp), raw);
      // Built: type t, 2 blocks, checksums recomputed, nothing XORed.
      const uint8_t mode = static_cast<uint8_t>(1 | (1 << 1) | (t << 3) | 0x40 | (fp << 7));
      ok &= Write(dir, "built_" + std::to_string(t) + "_" + std::to_string(fp), {mode, 0, 0});
    }
  }
  std::vector<uint8_t> empty = {0};
  const std::vector<uint8_t> s = testing::Stream(OwnLayout(), {}, "e");
  empty.insert(empty.end(), s.begin(), s.end());
  ok &= Write(dir, "raw_empty", empty);
  if (!ok) {
    std::fprintf(stderr, "kv_transfer_fuzz_seeds: cannot write into %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
