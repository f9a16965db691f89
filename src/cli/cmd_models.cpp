// Replaced by the real command when its issue lands.
#include "cli/commands.h"
#include "cli/not_yet.h"

namespace qvl::cli {

int cmd_models(int, char**) { return not_yet("models", "model download, issue 6"); }

}  // namespace qvl::cli
