// pagoda: command-line front end. Dispatches to a subcommand; no engine logic here.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/log.h"
#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* help;
};

const Command kCommands[] = {
    {"generate", pagoda::cli::CmdGenerate, "generate text from a prompt (streams to stdout)"},
    {"embed", pagoda::cli::CmdEmbed, "embeddings of the lines of a file, as JSONL"},
    {"inspect", pagoda::cli::CmdInspect, "print a GGUF file's metadata and tensor table"},
    {"bench", pagoda::cli::CmdBench, "prompt-processing and generation speed (pp512 / tg128)"},
    {"make-model", pagoda::cli::CmdMakeModel, "write a random-weight model (tests, benchmarks)"},
    {"quantize", pagoda::cli::CmdQuantize, "write a quantized copy of a GGUF model (q8_0 q4_0 q4_1 q5_0 q4_k)"},
    {"import-tokenizer", pagoda::cli::CmdImportTokenizer, "build GGUF tokenizer metadata from a HF tokenizer.json"},
    {"tokenize", pagoda::cli::CmdTokenize, "print the token ids of a text"},
    {"serve", pagoda::cli::CmdServe, "OpenAI-compatible HTTP server"},
    {"gateway", pagoda::cli::CmdGateway, "OpenAI-compatible gateway in front of many replicas"},
    {"admin", pagoda::cli::CmdAdmin, "tenants, API keys, limits, plans, prices and usage (admin API client)"},
    {"perplexity", pagoda::cli::CmdPerplexity, "perplexity of a model over a text file (KV cache dtypes)"},
};

void Usage(FILE* out) {
  std::fprintf(out, "usage: pagoda <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-17s %s\n", c.name, c.help);
  std::fprintf(out, "\nRun `pagoda <command> --help` for the options of a command.\n");
}

// PAGODA_LOG_LEVEL=debug|info|warning|error|off (default info) for every
// command. False (with a message) for another value.
bool ApplyLogLevelFromEnv() {
  const char* v = std::getenv("PAGODA_LOG_LEVEL");
  if (v == nullptr || *v == '\0') return true;
  const struct {
    const char* name;
    pagoda::LogLevel level;
  } kLevels[] = {{"debug", pagoda::LogLevel::kDebug},
                 {"info", pagoda::LogLevel::kInfo},
                 {"warning", pagoda::LogLevel::kWarning},
                 {"error", pagoda::LogLevel::kError},
                 {"off", pagoda::LogLevel::kOff}};
  for (const auto& l : kLevels) {
    if (std::strcmp(v, l.name) == 0) {
      pagoda::SetLogLevel(l.level);
      return true;
    }
  }
  std::fprintf(stderr, "pagoda: PAGODA_LOG_LEVEL must be debug, info, warning, error or off\n");
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (!ApplyLogLevelFromEnv()) return 2;
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    Usage(stdout);
    return 0;
  }
  for (const auto& c : kCommands) {
    if (cmd == c.name) return c.fn(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "pagoda: unknown command '%s'\n\n", cmd.c_str());
  Usage(stderr);
  return 2;
}
