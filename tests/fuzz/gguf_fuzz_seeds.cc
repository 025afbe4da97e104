// Writes a small seed corpus of valid GGUF files (v2 and v3, several value
// and tensor types) into the directory given as argv[1].
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"

using namespace pagoda;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  for (uint32_t version : {2u, 3u}) {
    GgufWriter w;
    w.set_version(version);
    auto& md = w.metadata();
    md.Set("general.architecture", "llama");
    md.Set("general.alignment", uint32_t{32});
    md.Set("llama.block_count", uint32_t{2});
    md.Set("llama.rope.freq_base", 10000.0f);
    md.Set("flag", true);
    md.Set("big", uint64_t{123456789});
    md.Set("neg", int64_t{-7});
    md.Set("d", 0.5);
    md.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"<unk>", "<s>", "</s>", "a", "b"}));
    md.Set("tokenizer.ggml.scores", GgufValue::F32Array({0, 0, 0, -1, -2}));
    md.Set("nested", GgufValue::Array(GgufType::kArray, {GgufValue::I32Array({1, 2})}));
    std::vector<uint8_t> f32(4 * 32, 0), q8(34 * 2, 1), q4k(144, 2);
    if (!w.AddTensor("a", DType::kF32, {32}, f32.data(), f32.size()).ok() ||
        !w.AddTensor("b", DType::kQ8_0, {32, 2}, q8.data(), q8.size()).ok() ||
        !w.AddTensor("c", DType::kQ4_K, {256}, q4k.data(), q4k.size()).ok()) {
      return 1;
    }
    if (!w.Write(dir + "/seed_v" + std::to_string(version) + ".gguf").ok()) return 1;
  }
  return 0;
}
