#include "gguf/gguf_file.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"
#include "support/test_paths.h"
#include "tensor/fp16.h"

namespace pagoda {
namespace {

GgufWriter MakeWriter() {
  GgufWriter w;
  auto& md = w.metadata();
  md.Set("general.architecture", "llama");
  md.Set("u8", uint8_t{200});
  md.Set("i8", int8_t{-5});
  md.Set("u16", uint16_t{65000});
  md.Set("i16", int16_t{-30000});
  md.Set("u32", uint32_t{4000000000u});
  md.Set("i32", int32_t{-2000000000});
  md.Set("f32", 1.5f);
  md.Set("bool", true);
  md.Set("str", "héllo");
  md.Set("u64", uint64_t{1} << 60);
  md.Set("i64", int64_t{-(int64_t{1} << 60)});
  md.Set("f64", 2.25);
  md.Set("strs", GgufValue::StringArray({"a", "", "ccc"}));
  // nested: array of arrays of i32
  md.Set("nested", GgufValue::Array(GgufType::kArray, {GgufValue::I32Array({1, 2}), GgufValue::I32Array({3})}));
  std::vector<float> t0(8 * 3);
  for (size_t i = 0; i < t0.size(); ++i) t0[i] = static_cast<float>(i) * 0.5f;
  EXPECT_TRUE(w.AddTensor("t0", DType::kF32, {8, 3}, t0.data(), t0.size() * 4).ok());
  std::vector<uint16_t> t1(32);
  for (size_t i = 0; i < t1.size(); ++i) t1[i] = F32ToF16(static_cast<float>(i));
  EXPECT_TRUE(w.AddTensor("t1", DType::kF16, {32}, t1.data(), t1.size() * 2).ok());
  return w;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("pagoda_" + std::to_string(getpid()) + "_" + name)).string();
}

TEST(GgufFileTest, RoundTripsEveryValueTypeInBothVersions) {
  for (uint32_t version : {2u, 3u}) {
    GgufWriter w = MakeWriter();
    w.set_version(version);
    std::string path = TempPath("rt.gguf");
    ASSERT_TRUE(w.Write(path).ok());
    auto f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const GgufMetadata& md = (*f)->metadata();
    EXPECT_EQ((*f)->version(), version);
    EXPECT_EQ(md.GetString("general.architecture").value(), "llama");
    EXPECT_EQ(md.GetInt("u8").value(), 200);
    EXPECT_EQ(md.GetInt("i8").value(), -5);
    EXPECT_EQ(md.GetInt("u16").value(), 65000);
    EXPECT_EQ(md.GetInt("i16").value(), -30000);
    EXPECT_EQ(md.GetInt("u32").value(), 4000000000LL);
    EXPECT_EQ(md.GetInt("i32").value(), -2000000000LL);
    EXPECT_EQ(md.GetFloat("f32").value(), 1.5);
    EXPECT_EQ(md.GetBool("bool").value(), true);
    EXPECT_EQ(md.GetString("str").value(), "héllo");
    EXPECT_EQ(md.GetInt("u64").value(), int64_t{1} << 60);
    EXPECT_EQ(md.GetInt("i64").value(), -(int64_t{1} << 60));
    EXPECT_EQ(md.GetFloat("f64").value(), 2.25);
    EXPECT_EQ(md.GetStringArray("strs").value(), (std::vector<std::string>{"a", "", "ccc"}));
    const GgufArray* nested = md.Find("nested")->AsArray();
    ASSERT_NE(nested, nullptr);
    ASSERT_EQ(nested->items.size(), 2u);
    EXPECT_EQ(nested->items[0].AsArray()->items.size(), 2u);
    EXPECT_EQ(md.entries()[0].first, "general.architecture");  // order kept

    auto t0 = (*f)->GetTensor("t0");
    ASSERT_TRUE(t0.ok());
    EXPECT_EQ(t0->ne[0], 8);
    EXPECT_EQ(t0->ne[1], 3);
    EXPECT_EQ(t0->rows(), 3);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t0->data) % 32, 0u);
    EXPECT_FLOAT_EQ(static_cast<const float*>(t0->data)[9], 4.5f);
    auto t1 = (*f)->GetTensor("t1");
    ASSERT_TRUE(t1.ok());
    EXPECT_EQ(F16ToF32(static_cast<const uint16_t*>(t1->data)[31]), 31.0f);
    EXPECT_FALSE((*f)->GetTensor("nope").ok());
    std::filesystem::remove(path);
  }
}

TEST(GgufFileTest, HonoursGeneralAlignment) {
  GgufWriter w = MakeWriter();
  w.metadata().Set("general.alignment", uint32_t{64});
  auto bytes = w.Serialize();
  auto p = ParseGguf(bytes.data(), bytes.size());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->alignment, 64u);
  EXPECT_EQ(p->data_offset % 64, 0u);
  for (const auto& t : p->tensors) EXPECT_EQ(t.offset % 64, 0u);
}

TEST(GgufFileTest, TypedGettersNameTheKeyOnError) {
  GgufWriter w = MakeWriter();
  auto s = w.metadata().GetInt("str");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'str'"), std::string::npos);
  auto m = w.metadata().GetInt("missing.key");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'missing.key'"), std::string::npos);
}

TEST(GgufFileTest, EveryTruncationIsAnErrorNotACrash) {
  auto bytes = MakeWriter().Serialize();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    auto p = ParseGguf(cut.data(), cut.size());
    EXPECT_FALSE(p.ok()) << "prefix of " << n << " bytes parsed";
  }
}

// Offsets of fields in the serialized header of a one-tensor file.
struct OneTensor {
  std::vector<uint8_t> bytes;
  size_t info_pos;  // start of the tensor info (name length)
};

OneTensor MakeOneTensor() {
  GgufWriter w;
  w.metadata().Set("general.architecture", "llama");
  std::vector<float> t(32, 1.0f);
  EXPECT_TRUE(w.AddTensor("w", DType::kF32, {32}, t.data(), 128).ok());
  OneTensor o{w.Serialize(), 0};
  // header 24 + key(8+20) + type 4 + string(8+5)
  o.info_pos = 24 + 8 + std::strlen("general.architecture") + 4 + 8 + 5;
  return o;
}

TEST(GgufFileTest, RejectsCorruptHeadersWithClearErrors) {
  auto expect_error = [](std::vector<uint8_t> b, const std::string& needle) {
    auto p = ParseGguf(b.data(), b.size());
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find(needle), std::string::npos) << p.status().message();
  };
  OneTensor o = MakeOneTensor();
  // Sanity: unmodified parses.
  ASSERT_TRUE(ParseGguf(o.bytes.data(), o.bytes.size()).ok());
  {
    auto b = o.bytes; b[0] = 'X';
    expect_error(b, "bad magic");
  }
  {
    auto b = o.bytes; b[4] = 7;
    expect_error(b, "unsupported GGUF version");
  }
  {
    auto b = o.bytes;  // absurd metadata count
    uint64_t n = uint64_t{1} << 62; std::memcpy(&b[16], &n, 8);
    expect_error(b, "metadata count");
  }
  const size_t dims_pos = o.info_pos + 8 + 1 + 4;  // name "w"
  const size_t type_pos = dims_pos + 8;
  const size_t offset_pos = type_pos + 4;
  {
    auto b = o.bytes; uint32_t t = 19;  // IQ type we do not support
    std::memcpy(&b[type_pos], &t, 4);
    expect_error(b, "unsupported tensor type 19");
  }
  {
    auto b = o.bytes; uint64_t off = 1 << 20;
    std::memcpy(&b[offset_pos], &off, 8);
    expect_error(b, "past the end");
  }
  {
    auto b = o.bytes; uint64_t off = 4;
    std::memcpy(&b[offset_pos], &off, 8);
    expect_error(b, "not aligned");
  }
  {
    auto b = o.bytes; uint64_t ne = uint64_t{1} << 45;
    std::memcpy(&b[dims_pos], &ne, 8);
    expect_error(b, "absurd dimension");
  }
  {
    auto b = o.bytes; uint32_t nd = 9;
    std::memcpy(&b[o.info_pos + 8 + 1], &nd, 4);
    expect_error(b, "dimensions");
  }
}

TEST(GgufFileTest, OpenNamesTheFileInErrors) {
  auto missing = GgufFile::Open("/nonexistent/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/model.gguf"), std::string::npos);
  std::string path = TempPath("garbage.gguf");
  { std::ofstream(path) << "this is not a gguf file at all"; }
  auto bad = GgufFile::Open(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path), std::string::npos);
  EXPECT_NE(bad.status().message().find("bad magic"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(GgufFileTest, FromMemoryOwnsACopyOfTheImage) {
  std::vector<uint8_t> image = MakeWriter().Serialize();
  auto f = GgufFile::FromMemory("mem.gguf", image.data(), image.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::fill(image.begin(), image.end(), uint8_t{0});  // the file keeps its own bytes
  EXPECT_EQ((*f)->path(), "mem.gguf");
  EXPECT_EQ((*f)->metadata().GetString("general.architecture").value(), "llama");
  auto t0 = (*f)->GetTensor("t0");
  ASSERT_TRUE(t0.ok()) << t0.status().ToString();
  EXPECT_EQ(static_cast<const float*>(t0->data)[5], 2.5f);

  const uint8_t garbage[] = {'n', 'o', 'p', 'e'};
  auto bad = GgufFile::FromMemory("mem.gguf", garbage, sizeof garbage);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("mem.gguf"), std::string::npos);
  EXPECT_FALSE(GgufFile::FromMemory("empty.gguf", nullptr, 0).ok());
}

TEST(GgufFileTest, LoadsStories260K) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  auto f = GgufFile::Open(testing::TestDataPath("stories260K.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const auto& md = (*f)->metadata();
  EXPECT_EQ(md.GetString("general.architecture").value(), "llama");
  EXPECT_EQ(md.GetInt("llama.embedding_length").value(), 64);
  EXPECT_EQ(md.GetInt("llama.block_count").value(), 5);
  EXPECT_EQ(md.GetStringArray("tokenizer.ggml.tokens").value().size(), 512u);
  auto emb = (*f)->GetTensor("token_embd.weight");
  ASSERT_TRUE(emb.ok());
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
  EXPECT_EQ(emb->type, DType::kF32);
  EXPECT_EQ((*f)->tensors().size(), 48u);
}

TEST(GgufFileTest, LoadsEveryVocabFile) {
  PAGODA_REQUIRE_TESTDATA("ggml-vocab-gpt-2.gguf");
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(PAGODA_TESTDATA_DIR)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ggml-vocab-", 0) != 0 || e.path().extension() != ".gguf") continue;
    auto f = GgufFile::Open(e.path().string());
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().ToString();
    EXPECT_TRUE((*f)->metadata().Has("tokenizer.ggml.model")) << name;
    ++n;
  }
  EXPECT_GE(n, 12);
}

}  // namespace
}  // namespace pagoda
