// The `qvl` subcommands. Each returns the process exit code; errors are thrown
// as qvl::Error (exit 1) or qvl::UsageError (exit 2) and printed by main().
#pragma once

namespace qvl::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);  // argv[0] is the subcommand name
};

int cmd_info(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_pull(int argc, char** argv);
int cmd_models(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_embed(int argc, char** argv);
int cmd_rerank(int argc, char** argv);
int cmd_index(int argc, char** argv);
int cmd_search(int argc, char** argv);

}  // namespace qvl::cli
