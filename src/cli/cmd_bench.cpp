// Replaced by the real command when its issue lands.
#include "cli/commands.h"
#include "cli/not_yet.h"

namespace qvl::cli {

int cmd_bench(int, char**) { return not_yet("bench", "model benchmarks, issue 5"); }

}  // namespace qvl::cli
