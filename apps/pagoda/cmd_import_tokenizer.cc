// pagoda import-tokenizer tokenizer.json [--config tokenizer_config.json] -o out.gguf:
// writes a vocab-only GGUF (tokenizer.* metadata, no tensors).
#include <fstream>
#include <sstream>

#include "cli_util.h"
#include "commands.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError("cannot read " + path);
  return ss.str();
}

}  // namespace

int CmdImportTokenizer(int argc, char** argv) {
  CLI::App app("Build a vocab-only GGUF (tokenizer.* metadata) from a Hugging Face tokenizer.json",
               "import-tokenizer");
  std::string json_path, config_path, out_path;
  app.add_option("tokenizer_json", json_path, "Hugging Face tokenizer.json")->required();
  app.add_option("--config", config_path,
                 "tokenizer_config.json: special tokens, add_bos_token/add_eos_token, chat_template");
  app.add_option("-o,--output", out_path, "GGUF file to write")->required();
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;

  auto json = ReadFile(json_path);
  if (!json.ok()) return Fail(json.status());
  std::string config;
  if (!config_path.empty()) {
    auto c = ReadFile(config_path);
    if (!c.ok()) return Fail(c.status());
    config = std::move(*c);
  }
  auto md = ImportHfTokenizer(*json, config);
  if (!md.ok()) return Fail(md.status().WithContext(json_path));
  // Refuse to write a file the engine could not load.
  auto tok = Tokenizer::FromMetadata(*md);
  if (!tok.ok()) return Fail(tok.status().WithContext("imported metadata does not load"));

  GgufWriter writer;
  for (const auto& [key, value] : md->entries()) writer.metadata().Set(key, value);
  if (Status s = writer.Write(out_path); !s.ok()) return Fail(s);

  auto merges = md->GetStringArray("tokenizer.ggml.merges");
  std::printf("wrote %s: model %s, pre %s, %d tokens, %zu merges, bos %d, eos %d%s\n", out_path.c_str(),
              md->GetStringOr("tokenizer.ggml.model", "?")->c_str(),
              md->GetStringOr("tokenizer.ggml.pre", "?")->c_str(), (*tok)->vocab_size(),
              merges.ok() ? merges->size() : size_t{0}, (*tok)->bos(), (*tok)->eos(),
              md->Has("tokenizer.chat_template") ? ", chat template" : "");
  return 0;
}

}  // namespace pagoda::cli
