// pagoda tokenize: token ids (and pieces) of a text.
#include <cstdio>

#include "cli_util.h"
#include "commands.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {

int CmdTokenize(int argc, char** argv) {
  CLI::App app("Print the token ids of a text", "tokenize");
  std::string model_path, prompt;
  bool no_special = false, no_parse_special = false, ids_only = false;
  app.add_option("-m,--model", model_path, "GGUF file with tokenizer metadata")->required();
  app.add_option("-p,--prompt", prompt, "text")->required();
  app.add_flag("--no-bos", no_special, "do not add BOS/EOS");
  app.add_flag("--no-parse-special", no_parse_special, "treat special-token text as plain text");
  app.add_flag("--ids", ids_only, "print only the ids, space separated");
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  auto file = GgufFile::Open(model_path);
  if (!file.ok()) return Fail(file.status());
  auto tok = Tokenizer::FromMetadata((*file)->metadata());
  if (!tok.ok()) return Fail(tok.status().WithContext(model_path));
  auto ids = (*tok)->Encode(prompt, !no_special, !no_parse_special);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids_only) {
      std::printf("%s%d", i ? " " : "", ids[i]);
    } else {
      std::printf("%6d -> '%s'\n", ids[i], (*tok)->TokenToPiece(ids[i], true).c_str());
    }
  }
  if (ids_only) std::printf("\n");
  return 0;
}

}  // namespace pagoda::cli
