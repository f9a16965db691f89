// `qvl pull REPO`: download a model into the Hugging Face cache without
// loading it, and print the snapshot folder (usable as --model).
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "io/model_source.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {

int cmd_pull(int argc, char** argv) {
  Args args("pull", "REPO [options]",
            "Download a model (only the files qvl reads) into the Hugging Face cache, resuming an interrupted\n"
            "download, and print its folder. Asks the hub for the revision's latest commit even when a copy\n"
            "is cached. The cache is HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub.");
  ModelSourceOptions source;
  visit_options(source, args);
  if (!args.parse(argc, argv)) return 0;
  if (args.positional().size() != 1)
    throw UsageError("pull: expected one repo id, e.g. qvl pull Qwen/Qwen3-VL-2B-Instruct (see qvl pull --help)");
  std::cout << pull_model(args.positional()[0], source) << "\n";
  return 0;
}

}  // namespace qvl::cli
