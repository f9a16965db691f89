// Replaced by the real command when its issue lands.
#include "cli/commands.h"
#include "cli/not_yet.h"

namespace qvl::cli {

int cmd_tokenize(int, char**) { return not_yet("tokenize", "tokenizer, issue 2"); }

}  // namespace qvl::cli
