// Replaced by the real command when its issue lands.
#include "cli/commands.h"
#include "cli/not_yet.h"

namespace qvl::cli {

int cmd_serve(int, char**) { return not_yet("serve", "HTTP service, issue 7"); }

}  // namespace qvl::cli
