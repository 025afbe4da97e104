// Runs the `pagoda` binary as a user would: real outputs on stdout, and for
// every kind of bad input one clear error naming the file and the problem on
// stderr with exit code 1 (never a crash).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/random_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

RunResult RunPagoda(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  const std::string err_path = (fs::temp_directory_path() / ("pagoda_cli_err_" + std::to_string(getpid()))).string();
  std::string cmd = Quote(PAGODA_BIN);
  for (const auto& a : args) cmd += " " + Quote(a);
  cmd += " 2>" + Quote(err_path);
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  std::ifstream e(err_path);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  fs::remove(err_path);
  return r;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("pagoda_cli_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // A small valid model; its bytes are the starting point of the bad ones.
  std::string WriteSmallModel(const std::string& name, const std::string& arch = "llama") {
    RandomModelSpec spec;
    spec.arch = arch;
    spec.n_embd = 64;
    spec.n_layer = 1;
    spec.n_head = 4;
    spec.n_head_kv = 2;
    spec.n_ff = 128;
    spec.n_vocab = 300;
    spec.weight_type = DType::kF32;
    EXPECT_TRUE(WriteRandomModel(spec, Path(name)).ok());
    return Path(name);
  }

  std::vector<uint8_t> ReadBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  std::string WriteBytes(const std::string& name, const std::vector<uint8_t>& b) {
    std::ofstream(Path(name), std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                                       static_cast<std::streamsize>(b.size()));
    return Path(name);
  }

  // Expects exit code 1 and an error that names `file` and contains `needle`.
  void ExpectCleanError(const std::vector<std::string>& args, const std::string& file, const std::string& needle) {
    RunResult r = RunPagoda(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << "error does not name the file: " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
    EXPECT_EQ(r.err.find("AddressSanitizer"), std::string::npos);
  }

  std::filesystem::path dir_;
};

TEST_F(CliTest, GenerateReproducesLlamaCppGreedyTextOnStories260K) {
  PAGODA_REQUIRE_TESTDATA("stories260K.reference.json");
  std::ifstream in(testing::TestDataPath("stories260K.reference.json"));
  nlohmann::json ref = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& c : ref["cases"]) {
    if (checked == 3) break;
    RunResult r = RunPagoda({"generate", "-m", testing::TestDataPath("stories260K.gguf"), "-p", c["prompt"].get<std::string>(),
                       "-n", std::to_string(c["generated_token_ids"].size()), "--temp", "0", "--ignore-eos", "-t", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, c["generated_text"].get<std::string>() + "\n") << "prompt: " << c["prompt"];
    ++checked;
  }
}

TEST_F(CliTest, SameSeedSameTextDifferentSeedDifferentText) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  auto gen = [&](const std::string& seed) {
    return RunPagoda({"generate", "-m", testing::TestDataPath("stories260K.gguf"), "-p", "Once upon a time", "-n", "40",
                "--temp", "1.0", "--seed", seed, "-t", "1"})
        .out;
  };
  EXPECT_EQ(gen("7"), gen("7"));
  EXPECT_NE(gen("7"), gen("8"));
}

TEST_F(CliTest, InspectPrintsMetadataAndTensors) {
  std::string m = WriteSmallModel("small.gguf");
  RunResult r = RunPagoda({"inspect", m});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("general.architecture"), std::string::npos);
  EXPECT_NE(r.out.find("blk.0.attn_q.weight"), std::string::npos);
}

TEST_F(CliTest, MissingFileIsAClearError) {
  ExpectCleanError({"generate", "-m", Path("nope.gguf"), "-p", "x"}, "nope.gguf", "cannot open");
  ExpectCleanError({"inspect", Path("nope.gguf")}, "nope.gguf", "cannot open");
}

TEST_F(CliTest, TruncatedFileIsAClearError) {
  auto b = ReadBytes(WriteSmallModel("small.gguf"));
  for (size_t cut : {size_t{3}, size_t{100}, b.size() / 2, b.size() - 1}) {
    std::vector<uint8_t> t(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(cut));
    std::string p = WriteBytes("trunc.gguf", t);
    RunResult r = RunPagoda({"generate", "-m", p, "-p", "x", "-n", "2"});
    EXPECT_EQ(r.exit_code, 1) << "cut at " << cut << ": " << r.err;
    EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
  }
}

TEST_F(CliTest, CorruptHeaderFieldsAreClearErrors) {
  std::string m = WriteSmallModel("small.gguf");
  auto bytes = ReadBytes(m);
  auto parsed = ParseGguf(bytes.data(), bytes.size());
  ASSERT_TRUE(parsed.ok());
  // Locate the first tensor's info record by its name in the header.
  const std::string name = parsed->tensors[0].name;
  auto it = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
  ASSERT_NE(it, bytes.end());
  const size_t name_end = static_cast<size_t>(it - bytes.begin()) + name.size();
  uint32_t n_dims;
  std::memcpy(&n_dims, &bytes[name_end], 4);
  const size_t dims_pos = name_end + 4;
  const size_t type_pos = dims_pos + 8 * n_dims;
  const size_t offset_pos = type_pos + 4;
  {
    auto b = bytes;
    uint32_t t = 23;  // an IQ type
    std::memcpy(&b[type_pos], &t, 4);
    std::string p = WriteBytes("type.gguf", b);
    ExpectCleanError({"generate", "-m", p, "-p", "x"}, p, "unsupported tensor type 23");
  }
  {
    auto b = bytes;
    uint64_t off = uint64_t{1} << 40;
    std::memcpy(&b[offset_pos], &off, 8);
    std::string p = WriteBytes("offset.gguf", b);
    ExpectCleanError({"generate", "-m", p, "-p", "x"}, p, "past the end");
  }
  {
    auto b = bytes;
    uint64_t ne = uint64_t{1} << 44;
    std::memcpy(&b[dims_pos], &ne, 8);
    std::string p = WriteBytes("dims.gguf", b);
    ExpectCleanError({"generate", "-m", p, "-p", "x"}, p, "absurd dimension");
  }
  {
    auto b = bytes;
    b[0] = 'X';
    std::string p = WriteBytes("magic.gguf", b);
    ExpectCleanError({"inspect", p}, p, "not a GGUF file");
  }
}

TEST_F(CliTest, UnknownArchitectureIsAClearError) {
  auto f = GgufFile::Open(WriteSmallModel("small.gguf"));
  ASSERT_TRUE(f.ok());
  GgufWriter w;
  for (const auto& [k, v] : (*f)->metadata().entries()) w.metadata().Set(k, v);
  w.metadata().Set("general.architecture", "foo");
  for (const auto& t : (*f)->tensors()) {
    TensorView v = (*f)->View(t);
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    ASSERT_TRUE(w.AddTensor(t.name, t.type, ne, v.data, static_cast<size_t>(v.nbytes)).ok());
  }
  std::string p = Path("foo.gguf");
  ASSERT_TRUE(w.Write(p).ok());
  ExpectCleanError({"generate", "-m", p, "-p", "x"}, p, "unknown architecture 'foo'");
}

TEST_F(CliTest, MissingTokenizerKeysAreAClearError) {
  auto f = GgufFile::Open(WriteSmallModel("small.gguf"));
  ASSERT_TRUE(f.ok());
  GgufWriter w;
  for (const auto& [k, v] : (*f)->metadata().entries()) {
    if (k != "tokenizer.ggml.tokens") w.metadata().Set(k, v);
  }
  for (const auto& t : (*f)->tensors()) {
    TensorView v = (*f)->View(t);
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    ASSERT_TRUE(w.AddTensor(t.name, t.type, ne, v.data, static_cast<size_t>(v.nbytes)).ok());
  }
  std::string p = Path("notok.gguf");
  ASSERT_TRUE(w.Write(p).ok());
  ExpectCleanError({"generate", "-m", p, "-p", "x"}, p, "tokenizer.ggml.tokens");
}

TEST_F(CliTest, BadFlagsAreRejected) {
  std::string m = WriteSmallModel("small.gguf");
  EXPECT_EQ(RunPagoda({"generate", "-m", m, "-p", "x", "-n", "0"}).exit_code, 1);
  EXPECT_EQ(RunPagoda({"generate", "-m", m, "-p", "x", "--temp", "-1"}).exit_code, 1);
  EXPECT_EQ(RunPagoda({"generate", "-m", m, "-p", "x", "--logit-bias", "abc"}).exit_code, 1);
  EXPECT_EQ(RunPagoda({"generate", "-m", m, "-p", "x", "--logit-bias", "99999=1"}).exit_code, 1);
  EXPECT_EQ(RunPagoda({"generate", "-m", m, "-p", "x", "-n", "notanumber"}).exit_code, 2);
  EXPECT_EQ(RunPagoda({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunPagoda({"make-model", "-o", Path("x.gguf"), "--type", "q9_9"}).exit_code, 1);
}

// --device: cpu is the default and runs; cuda never crashes and never runs
// an unvalidated GPU forward: it exits 1 saying why (no CUDA support in this
// build, no device, device N not present, or the CUDA forward not enabled yet).
TEST_F(CliTest, DeviceFlagRunsOnCpuAndRefusesCudaClearly) {
  const std::string m = WriteSmallModel("small.gguf");
  RunResult cpu = RunPagoda({"generate", "-m", m, "-p", "x", "-n", "2", "--device", "cpu", "--seed", "1"});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.err;
  const std::vector<std::vector<std::string>> cuda_runs = {
      {"generate", "-m", m, "-p", "x", "-n", "2", "--device", "cuda"},
      {"bench", "-m", m, "--device", "cuda:0"},
      {"serve", "-m", m, "--port", "0", "--device", "cuda:7"},
  };
  for (const auto& args : cuda_runs) {
    RunResult r = RunPagoda(args);
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    const bool explained = r.err.find("this build has no CUDA support") != std::string::npos ||
                           r.err.find("no CUDA device: ") != std::string::npos ||
                           r.err.find("not present: ") != std::string::npos ||
                           r.err.find("is not supported: this build has kernels for sm_90a") != std::string::npos ||
                           r.err.find("model forward on CUDA is not enabled yet") != std::string::npos;
    EXPECT_TRUE(explained) << args[0] << ": " << r.err;
  }
  RunResult bad = RunPagoda({"generate", "-m", m, "-p", "x", "--device", "tpu"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown device 'tpu' (expected cpu, cuda or cuda:N)"), std::string::npos) << bad.err;
}

TEST_F(CliTest, ServeAndGatewayTlsFlagsFailNamingTheFile) {
  // Checked before the model loads (the built-in demo model here) and before
  // anything listens: a clear error, exit 1.
  const std::string cert = Path("cert.pem");
  std::ofstream(cert) << "not a certificate\n";
  auto r = RunPagoda({"serve", "--port", "0", "--tls-cert", cert});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--tls-cert and --tls-key go together"), std::string::npos) << r.err;
  r = RunPagoda({"serve", "--port", "0", "--tls-cert", cert, "--tls-key", Path("missing.key")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(Path("missing.key")), std::string::npos) << r.err;
  std::ofstream(Path("key.pem")) << "not a key\n";
  r = RunPagoda({"serve", "--port", "0", "--tls-cert", cert, "--tls-key", Path("key.pem")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("TLS certificate file '" + cert + "'"), std::string::npos) << r.err;

  const std::string config = Path("gw.toml");
  std::ofstream(config) << "[gateway]\ntls_cert = \"" << cert << "\"\n[[models]]\nname = \"m\"\n"
                        << "[[models.deployments]]\nversion = \"v1\"\n[[models.deployments.replicas]]\n"
                        << "url = \"http://127.0.0.1:1\"\n";
  r = RunPagoda({"gateway", "--config", config, "--listen", "127.0.0.1:0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(config + ":2: gateway.tls_cert needs gateway.tls_key"), std::string::npos) << r.err;
  r = RunPagoda({"gateway", "--config", config, "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key",
                 Path("key.pem")});
  EXPECT_EQ(r.exit_code, 1);  // the flags override the file's (lonely) tls_cert only after it parses
  std::ofstream(config) << "[[models]]\nname = \"m\"\n[[models.deployments]]\nversion = \"v1\"\n"
                        << "[[models.deployments.replicas]]\nurl = \"http://127.0.0.1:1\"\n";
  r = RunPagoda({"gateway", "--config", config, "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key",
                 Path("key.pem")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("TLS certificate file '" + cert + "'"), std::string::npos) << r.err;
}

TEST_F(CliTest, MakeModelThenGenerateAndBench) {
  std::string m = Path("made.gguf");
  RunResult mk = RunPagoda({"make-model", "-o", m, "--arch", "qwen2", "--type", "q4_0", "--n-embd", "128", "--n-layer", "2",
                      "--n-head", "4", "--n-head-kv", "2", "--n-ff", "256", "--n-vocab", "512", "--tied"});
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  RunResult g = RunPagoda({"generate", "-m", m, "-p", "hello", "-n", "8", "--temp", "0"});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  RunResult b = RunPagoda({"bench", "-m", m, "-p", "32", "-n", "8", "-r", "1"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("pp32"), std::string::npos);
  EXPECT_NE(b.out.find("tg8"), std::string::npos);
}

// pagoda bench --membw: the machine's read bandwidth, no model.
TEST_F(CliTest, BenchMembwPrintsBandwidth) {
  RunResult r = RunPagoda({"bench", "--membw", "-t", "1", "--membw-passes", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| membw | 1 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu: "), std::string::npos) << r.out;
  EXPECT_EQ(RunPagoda({"bench", "--membw", "--membw-passes", "-1"}).exit_code, 2);
  EXPECT_EQ(RunPagoda({"bench", "--membw", "--membw-passes", "x"}).exit_code, 2);
  EXPECT_EQ(RunPagoda({"bench", "--membw", "-m", "x.gguf"}).exit_code, 2);
  EXPECT_EQ(RunPagoda({"bench", "--membw", "--membw-passes", "0"}).exit_code, 1);
}

// pagoda bench prints the CPU, the ISA the kernels use and the kernel of each
// weight type before the table, and a bound beside each figure.
TEST_F(CliTest, BenchPrintsCpuKernelPathsAndBounds) {
  std::string m = Path("bench.gguf");
  ASSERT_EQ(RunPagoda({"make-model", "-o", m, "--type", "q4_0", "--n-embd", "128", "--n-layer", "2", "--n-head",
                       "4", "--n-head-kv", "2", "--n-ff", "256", "--n-vocab", "512"})
                .exit_code,
            0);
  RunResult b = RunPagoda({"bench", "-m", m, "-p", "8", "-n", "4", "-r", "1", "--membw-passes", "2"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("cpu: "), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("kernels dispatch to "), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("kernels: Q4_0"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("tg (1 tok) "), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("pp (8 tok) "), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("membw: "), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("GOP/s"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("% of "), std::string::npos) << b.out;
  // The share of the measured peak is claimed where the kernels run AVX2 code.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !__builtin_cpu_supports("avx512f") &&
      std::getenv("PAGODA_ISA") == nullptr) {
    EXPECT_NE(b.out.find("peak: f32 FMA "), std::string::npos) << b.out;
    EXPECT_NE(b.out.find("of the int8 peak"), std::string::npos) << b.out;
  }
  // PAGODA_ISA=scalar is honoured and named; --membw-passes 0 skips the bound.
  ::setenv("PAGODA_ISA", "scalar", 1);
  RunResult s = RunPagoda({"bench", "-m", m, "-p", "8", "-n", "2", "-r", "1", "--membw-passes", "0"});
  ::unsetenv("PAGODA_ISA");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("kernels dispatch to scalar"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("PAGODA_ISA=scalar"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("scalar/dequant-f32"), std::string::npos) << s.out;
  EXPECT_EQ(s.out.find("membw: "), std::string::npos) << s.out;
  EXPECT_EQ(s.out.find("peak: "), std::string::npos) << s.out;
}

// pagoda quantize (docs/QUANTIZATION.md): stories260K to Q8_0, then generate
// on it with and without --decode-weights; bad inputs are clear errors.
TEST_F(CliTest, QuantizeThenGenerateWithDecodeWeights) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  const std::string q8 = Path("s_q8_0.gguf");
  RunResult q = RunPagoda({"quantize", testing::TestDataPath("stories260K.gguf"), q8, "--type", "q8_0", "-t", "2"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto f = GgufFile::Open(q8);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_q.weight")->type, DType::kQ8_0);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_norm.weight")->type, DType::kF32);
  RunResult g = RunPagoda({"generate", "-m", q8, "-p", "Once upon a time", "-n", "16", "--temp", "0"});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_GT(g.out.size(), 16u);
  RunResult d = RunPagoda({"generate", "-m", q8, "-p", "Once upon a time", "-n", "16", "--temp", "0",
                           "--decode-weights", "q4_0"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.err.find("decode weights Q4_0"), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("MiB of memory"), std::string::npos) << d.err;
  RunResult b = RunPagoda({"bench", "-m", q8, "-p", "16", "-n", "4", "-r", "1", "--decode-weights", "q4_k"});
  EXPECT_EQ(b.exit_code, 0) << b.err;

  const std::string q4 = Path("s_q4_0.gguf");
  ASSERT_EQ(RunPagoda({"quantize", testing::TestDataPath("stories260K.gguf"), q4, "--type", "q4_0"}).exit_code, 0);
  // A 4-bit checkpoint cannot supply decode weights; an unknown type is refused.
  ExpectCleanError({"generate", "-m", q4, "-p", "x", "--decode-weights", "q4_0"}, q4, "--decode-weights");
  RunResult u = RunPagoda({"generate", "-m", q8, "-p", "x", "--decode-weights", "q8_0"});
  EXPECT_EQ(u.exit_code, 1);
  EXPECT_NE(u.err.find("q4_0 or q4_k"), std::string::npos) << u.err;
  // Re-quantizing 4-bit input, an unknown type, a missing file.
  ExpectCleanError({"quantize", q4, Path("x.gguf"), "--type", "q4_k"}, q4, "Q4_0");
  RunResult t = RunPagoda({"quantize", q8, Path("y.gguf"), "--type", "q3_k"});
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_NE(t.err.find("q3_k"), std::string::npos) << t.err;
  ExpectCleanError({"quantize", Path("missing.gguf"), Path("z.gguf"), "--type", "q8_0"}, "missing.gguf", "");
  EXPECT_EQ(RunPagoda({"quantize", q8, q8, "--type", "q4_0"}).exit_code, 1);
}

// pagoda perplexity --prompts: agreement over given prompts. A type against
// itself agrees everywhere (the positions are prompts x --n-generate); f32
// against f16 KV on stories260K is the near-exact pair (>= 99%); bad prompt
// options are clear errors.
TEST_F(CliTest, PerplexityAgreementOverPrompts) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  const std::string text = std::string(PAGODA_SOURCE_DIR) + "/tests/data/tiny_stories.txt";
  const std::string prompts = Path("prompts.txt");
  std::ofstream(prompts) << "Once upon a time\nThe cat sat\\n\\nThe dog\n\n";
  const std::string model = testing::TestDataPath("stories260K.gguf");
  RunResult same = RunPagoda({"perplexity", "-m", model, "-f", text, "-c", "64", "--chunks", "1", "--kv-cache-dtype",
                              "f16", "--compare-kv-dtype", "f16", "--prompts", prompts, "--n-generate", "20"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("top-1 agreement with f16 KV: 1.000000 (40 of 40 positions)"), std::string::npos)
      << same.out;
  RunResult f32 = RunPagoda({"perplexity", "-m", model, "-f", text, "-c", "64", "--chunks", "1", "--kv-cache-dtype",
                             "f32", "--compare-kv-dtype", "f16", "--prompts", prompts, "--n-generate", "20"});
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_NE(f32.out.find(" of 40 positions)"), std::string::npos) << f32.out;
  const std::string key = "top-1 agreement with f16 KV: ";
  const size_t at = f32.out.find(key);
  ASSERT_NE(at, std::string::npos) << f32.out;
  EXPECT_GE(std::stod(f32.out.substr(at + key.size())), 0.99) << f32.out;
  EXPECT_EQ(RunPagoda({"perplexity", "-m", model, "-f", text, "--prompts", prompts}).exit_code, 1);
  ExpectCleanError({"perplexity", "-m", model, "-f", text, "--compare-kv-dtype", "f16", "--prompts",
                    Path("none.txt")},
                   "none.txt", "cannot open");
  EXPECT_EQ(RunPagoda({"perplexity", "-m", model, "-f", text, "--compare-kv-dtype", "f16", "--prompts", prompts,
                       "--n-generate", "0"})
                .exit_code,
            1);
}

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

// `pagoda embed`: one JSONL row per input line, in order, unit vectors; the
// same text (plain, JSON string, {"text"}) embeds the same; an empty line
// is refused with its line number.
TEST(CliEmbedTest, WritesOneUnitVectorPerLineInOrder) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("pagoda_cli_embed_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string in = (dir / "in.txt").string(), bad = (dir / "bad.txt").string();
  std::ofstream(in) << "Once upon a time\n\"Once upon a time\"\n{\"text\":\"Once upon a time\"}\nThe cat sat.\n";
  std::ofstream(bad) << "a\n\nb\n";
  RunResult r = RunPagoda({"embed", "-m", testing::TestDataPath("stories260K.gguf"), "-f", in, "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 4u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["index"], i);
    double norm = 0;
    for (double v : rows[i]["embedding"]) norm += v * v;
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
  EXPECT_EQ(rows[0]["embedding"], rows[1]["embedding"]);
  EXPECT_EQ(rows[0]["embedding"], rows[2]["embedding"]);
  EXPECT_NE(rows[0]["embedding"], rows[3]["embedding"]);
  RunResult e = RunPagoda({"embed", "-m", testing::TestDataPath("stories260K.gguf"), "-f", bad});
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_NE(e.err.find("bad.txt:2: empty input"), std::string::npos) << e.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pagoda
