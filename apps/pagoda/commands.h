// Subcommands of the `pagoda` binary. Each parses its own flags (CLI11),
// wires library objects and returns the process exit code (0 ok, 1 error,
// 2 usage). No engine logic lives in apps/.
#pragma once

namespace pagoda::cli {

int CmdGenerate(int argc, char** argv);
int CmdEmbed(int argc, char** argv);           // `pagoda embed`: embeddings of a file's lines (JSONL)
int CmdInspect(int argc, char** argv);
int CmdBench(int argc, char** argv);
int CmdMakeModel(int argc, char** argv);
int CmdImportTokenizer(int argc, char** argv);
int CmdTokenize(int argc, char** argv);
int CmdServe(int argc, char** argv);
int CmdPerplexity(int argc, char** argv);
int CmdQuantize(int argc, char** argv);
int CmdGateway(int argc, char** argv);
int CmdGatewayRollout(int argc, char** argv);  // `pagoda gateway rollout ...`
int CmdAdmin(int argc, char** argv);           // `pagoda admin ...`: the admin API's client

}  // namespace pagoda::cli
