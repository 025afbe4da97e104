// pagoda generate: stream generated text to stdout; logs and timings to stderr.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "cli_util.h"
#include "commands.h"
#include "engine/generator.h"
#include "model_loading.h"

namespace pagoda::cli {
namespace {

Status ParseLogitBias(const std::vector<std::string>& items, SamplingParams* p) {
  for (const auto& s : items) {
    auto eq = s.find('=');
    if (eq == std::string::npos) return InvalidArgument("--logit-bias expects TOKEN_ID=BIAS, got '" + s + "'");
    try {
      size_t used = 0;
      int id = std::stoi(s.substr(0, eq), &used);
      if (used != eq) throw std::invalid_argument("id");
      std::string b = s.substr(eq + 1);
      float bias = (b == "-inf") ? -INFINITY : std::stof(b, &used);
      if (b != "-inf" && used != b.size()) throw std::invalid_argument("bias");
      p->logit_bias[id] = bias;
    } catch (const std::exception&) {
      return InvalidArgument("--logit-bias expects TOKEN_ID=BIAS, got '" + s + "'");
    }
  }
  return Status::Ok();
}

}  // namespace

int CmdGenerate(int argc, char** argv) {
  CLI::App app("Generate text from a prompt; the text streams to stdout", "generate");
  std::string model_path, prompt;
  int32_t n_predict = 128, threads = DefaultThreadCount(), n_ctx = 0;
  int64_t seed = -1;
  SamplingParams sp;
  sp.temperature = 0.8f;
  sp.top_k = 40;
  sp.top_p = 0.95f;
  sp.min_p = 0.05f;
  std::vector<std::string> logit_bias;
  bool ignore_eos = false, no_bos = false, special = false, verbose_prompt = false;
  std::string kv_type = "f16";
  app.add_option("-m,--model", model_path, "GGUF model (default: the built-in random-weight demo model)");
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate (> 0)");
  app.add_option("-t,--threads", threads, "threads (default: all cores)");
  app.add_option("-c,--ctx-size", n_ctx, "context size (default: min(training context, 4096))");
  app.add_option("--kv-cache-dtype,--kv-type", kv_type,
                 std::string("KV cache element type: ") + kernels::KvTypeChoices() + " (default f16)");
  app.add_option("--temp", sp.temperature, "temperature; 0 = greedy");
  app.add_option("--top-k", sp.top_k, "top-k (0 = off)");
  app.add_option("--top-p", sp.top_p, "top-p (1 = off)");
  app.add_option("--min-p", sp.min_p, "min-p (0 = off)");
  app.add_option("--repeat-penalty", sp.repetition_penalty, "repetition penalty (1 = off)");
  app.add_option("--repeat-last-n", sp.penalty_last_n, "tokens the repetition penalty looks back (-1 = all)");
  app.add_option("--presence-penalty", sp.presence_penalty, "OpenAI presence penalty");
  app.add_option("--frequency-penalty", sp.frequency_penalty, "OpenAI frequency penalty");
  app.add_option("--logit-bias", logit_bias, "TOKEN_ID=BIAS (repeatable; BIAS may be -inf)");
  app.add_option("-s,--seed", seed, "RNG seed (default: random, printed to stderr)");
  app.add_flag("--ignore-eos", ignore_eos, "do not stop at end-of-generation tokens");
  app.add_flag("--no-bos", no_bos, "do not add BOS even if the model asks for it");
  app.add_flag("--special", special, "print special tokens' text");
  app.add_flag("--verbose-prompt", verbose_prompt, "print the prompt token ids to stderr");
  std::string decode_weights;
  AddDecodeWeightsOption(app, &decode_weights);
  std::string device = "cpu";
  AddDeviceOption(app, &device);
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  if (Status s = CheckDevice(device); !s.ok()) return Fail(s);
  const auto model_options = ModelOptionsFromFlags(decode_weights);
  if (!model_options.ok()) return Fail(model_options.status());

  if (n_predict <= 0) return Fail("--n-predict must be positive");
  if (!kernels::ParseKvType(kv_type)) {
    return Fail("--kv-cache-dtype: unknown type '" + kv_type + "' (expected " + kernels::KvTypeChoices() + ")");
  }
  if (threads <= 0 || threads > 1024) return Fail("--threads must be between 1 and 1024");
  if (Status s = ParseLogitBias(logit_bias, &sp); !s.ok()) return Fail(s);
  if (seed < 0) seed = static_cast<int64_t>(std::random_device{}() & 0x7fffffff);
  sp.seed = static_cast<uint64_t>(seed);
  if (Status s = sp.Validate(); !s.ok()) return Fail(s);

  ThreadPool pool(threads);
  auto loaded = LoadModelAndTokenizer(model_path, pool, /*need_tokenizer=*/true, *model_options);
  if (!loaded.ok()) return Fail(loaded.status());
  Model& model = *loaded->model;
  const Tokenizer& tok = *loaded->tokenizer;
  const int64_t ctx_train = model.config().n_ctx_train;
  if (n_ctx <= 0) n_ctx = static_cast<int32_t>(std::min<int64_t>(ctx_train > 0 ? ctx_train : 4096, 4096));

  GenerateRequest req;
  req.prompt = tok.Encode(prompt, /*add_special=*/!no_bos, /*parse_special=*/true);
  if (req.prompt.empty()) {
    if (tok.bos() < 0) return Fail("the prompt is empty and the model has no BOS token to start from");
    req.prompt.push_back(tok.bos());
  }
  req.max_tokens = n_predict;
  req.sampling = sp;
  req.ignore_eog = ignore_eos;
  if (verbose_prompt) {
    std::fprintf(stderr, "prompt ids:");
    for (TokenId t : req.prompt) std::fprintf(stderr, " %d", t);
    std::fprintf(stderr, "\n");
  }
  std::fprintf(stderr, "pagoda: model %s (%s, %lld layers, vocab %lld) loaded in %.2f s; %d threads, ctx %d, seed %lld\n",
               loaded->file->path().c_str(), model.config().arch.c_str(),
               static_cast<long long>(model.config().n_layer), static_cast<long long>(model.n_vocab()),
               loaded->load_seconds, threads, n_ctx, static_cast<long long>(seed));

  auto gen = Generator::Create(model, n_ctx, [&tok](TokenId id) { return tok.IsEog(id); },
                               *kernels::ParseKvType(kv_type));
  if (!gen.ok()) return Fail(gen.status());
  StreamingDecoder dec(tok, special);
  auto res = (*gen)->Generate(req, [&](TokenId id, std::span<const float>) {
    if (!ignore_eos && tok.IsEog(id)) return true;
    std::string piece = dec.Push(id);
    if (!piece.empty()) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  std::string rest = dec.Flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!res.ok()) return Fail(res.status());
  const size_t n_gen = res->tokens.size();
  std::fprintf(stderr, "pagoda: prompt %d tokens in %.3f s (%.1f tok/s); generated %zu tokens in %.3f s (%.1f tok/s); stop: %s\n",
               res->n_prompt, res->prompt_seconds, res->n_prompt / std::max(res->prompt_seconds, 1e-9), n_gen,
               res->generate_seconds, n_gen > 1 ? (n_gen - 1) / std::max(res->generate_seconds, 1e-9) : 0.0,
               StopReasonName(res->stop));
  return 0;
}

}  // namespace pagoda::cli
