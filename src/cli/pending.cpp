// Commands whose issue has not landed yet. Each says so plainly and exits 1;
// a command moves to its own cmd_<name>.cpp when it is built.
#include <iostream>

#include "cli/commands.h"

namespace qvl::cli {
namespace {
int not_yet(const char* name, const char* issue) {
  std::cerr << "qvl " << name << ": not available yet (" << issue << "); see README.md for what works today\n";
  return 1;
}
}  // namespace

int cmd_run(int, char**) { return not_yet("run", "model forward pass, issue 5"); }
int cmd_chat(int, char**) { return not_yet("chat", "model forward pass, issue 5"); }
int cmd_serve(int, char**) { return not_yet("serve", "HTTP service, issue 7"); }
int cmd_bench(int, char**) { return not_yet("bench", "model benchmarks, issue 5"); }
int cmd_pull(int, char**) { return not_yet("pull", "model download, issue 6"); }
int cmd_models(int, char**) { return not_yet("models", "model download, issue 6"); }
int cmd_info(int, char**) { return not_yet("info", "model folder, issue 2"); }
int cmd_tokenize(int, char**) { return not_yet("tokenize", "tokenizer, issue 2"); }

}  // namespace qvl::cli
