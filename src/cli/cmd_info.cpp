// Replaced by the real command when its issue lands.
#include "cli/commands.h"
#include "cli/not_yet.h"

namespace qvl::cli {

int cmd_info(int, char**) { return not_yet("info", "model folder, issue 2"); }

}  // namespace qvl::cli
