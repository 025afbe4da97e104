// pagoda embed: embeddings of the lines of a file, as JSONL ({"index", "embedding"}
// per line, in input order), through the engine (batched as the server
// batches them), with a progress bar on stderr. A line that is a JSON string,
// or an object with "text" or "input", is that text; any other line is the
// text itself. Empty lines are refused with their line number.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "engine/engine.h"
#include "model_loading.h"
#include "server/model_abilities.h"

namespace pagoda::cli {
namespace {

std::string LineText(const std::string& line) {
  if (line.empty() || (line.front() != '"' && line.front() != '{')) return line;
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object()) {
    for (const char* k : {"text", "input"}) {
      auto it = j.find(k);
      if (it != j.end() && it->is_string()) return it->get<std::string>();
    }
  }
  return line;
}

}  // namespace

int CmdEmbed(int argc, char** argv) {
  CLI::App app("Write the embeddings of a file's lines as JSONL", "embed");
  std::string model_path, input_path, output_path;
  int threads = 2, parallel = 32;
  bool no_normalize = false;
  app.add_option("-m,--model", model_path, "GGUF model (an embedding model, or a decoder: last-token pooling)")
      ->required();
  app.add_option("-f,--file", input_path, "input: one text per line (plain, a JSON string, or {\"text\": ...})")
      ->required();
  app.add_option("-o,--output", output_path, "output JSONL (default: stdout)");
  app.add_option("-t,--threads", threads, "threads")->check(CLI::Range(1, 1024));
  app.add_option("--parallel", parallel, "inputs in flight at once")->check(CLI::Range(1, 4096));
  app.add_flag("--no-normalize", no_normalize, "do not L2-normalise the vectors");
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;

  std::ifstream in(input_path);
  if (!in) return Fail("cannot read " + input_path);
  std::vector<std::string> texts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    texts.push_back(LineText(line));
    if (texts.back().empty()) return Fail(input_path + ":" + std::to_string(texts.size()) + ": empty input");
  }
  FILE* out = stdout;
  if (!output_path.empty() && (out = std::fopen(output_path.c_str(), "w")) == nullptr) {
    return Fail("cannot write " + output_path);
  }
  ThreadPool pool(threads);
  auto loaded = LoadModelAndTokenizer(model_path, pool);
  if (!loaded.ok()) return Fail(loaded.status());
  Model& model = *loaded->model;
  EngineOptions o;
  o.n_ctx = static_cast<int32_t>(std::min<int64_t>(model.config().n_ctx_train, 8192));
  o.max_running = std::min(parallel, 64);
  o.max_waiting = parallel;
  o.prefix_caching = model.causal();
  const server::ModelAbilities a = server::ModelAbilitiesOf(model, *loaded->tokenizer, o);
  if (!a.embeds()) return Fail(model_path + " is a reranker (pooling rank): it scores pairs, it does not embed");
  auto engine = Engine::Create(model, o);
  if (!engine.ok()) return Fail(engine.status());
  (*engine)->Start();
  std::vector<RequestHandle> window;
  size_t next = 0, done = 0;
  auto submit = [&](size_t i) -> Status {
    EngineRequest r;
    r.id = "embed-" + std::to_string(i);
    r.prompt = loaded->tokenizer->Encode(texts[i], /*add_special=*/true, /*parse_special=*/false);
    if (static_cast<int64_t>(r.prompt.size()) > a.max_input_tokens) {
      return InvalidArgument(input_path + ":" + std::to_string(i + 1) + ": " + std::to_string(r.prompt.size()) +
                             " tokens, more than the " + std::to_string(a.max_input_tokens) + " one input may have");
    }
    r.max_tokens = 0;
    PrefillTask t;
    t.pooling = a.pooling;
    t.normalize = !no_normalize;
    r.prefill = t;
    auto h = (*engine)->Submit(std::move(r));
    if (!h.ok()) return h.status();
    window.push_back(*h);
    return Status::Ok();
  };
  Status failed;
  while (done < texts.size() && failed.ok()) {
    while (next < texts.size() && window.size() < static_cast<size_t>(parallel) && failed.ok()) failed = submit(next++);
    if (!failed.ok()) break;
    // The oldest first: output stays in input order.
    EngineEvent final_event;
    while (auto e = window.front()->Pop()) {
      if (e->is_final()) final_event = std::move(*e);
    }
    window.erase(window.begin());
    if (final_event.finish == FinishReason::kError) {
      failed = final_event.error.WithContext(input_path + ":" + std::to_string(done + 1));
      break;
    }
    nlohmann::json row = {{"index", done}, {"embedding", final_event.embedding}};
    std::fprintf(out, "%s\n", row.dump().c_str());
    ++done;
    if (done % 16 == 0 || done == texts.size()) {
      const int width = 40, filled = static_cast<int>(width * done / texts.size());
      std::fprintf(stderr, "\r[%s%s] %zu/%zu", std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), done, texts.size());
    }
  }
  std::fprintf(stderr, "\n");
  for (auto& h : window) h->Cancel();
  (*engine)->Stop();
  if (out != stdout) std::fclose(out);
  if (!failed.ok()) return Fail(failed);
  return 0;
}

}  // namespace pagoda::cli
