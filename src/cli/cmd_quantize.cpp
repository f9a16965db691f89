// `qvl quantize --model M --weights q8|q4`: converts a checkpoint's matrices
// once and keeps them in the weight cache (model/weight_cache.h), so a later
// qvl run/chat/serve/bench with the same --weights maps them at start
// instead of converting. Prints one JSON line: the file, its size, whether
// it was written now or already there (and then verified), and the seconds.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/weight_cache_files.h"
#include "io/model_source.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {

int cmd_quantize(int argc, char** argv) {
  Args args("quantize", "--model DIR|REPO --weights q8|q4 [options]",
            "Quantize a model's weights ahead of time into the weight cache, so qvl run, chat, serve and bench\n"
            "with the same --weights map them at start instead of converting them (docs/weight-cache.md).");
  ModelChoice model;
  visit_options(model, args);
  std::optional<WeightFormat> weights;
  args(weights, "weights", "FORMAT", "format to make").choices({WeightFormat::Q8, WeightFormat::Q4}, weight_format_name);
  int threads = 0;
  args(threads, "threads", "N", "conversion threads (0: physical cores)").range(0, 1024);
  WeightCacheOptions cache;
  visit_options(cache, args);
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("quantize: unexpected argument '", args.positional()[0], "' (see qvl quantize --help)"));
  if (model.model.empty()) throw UsageError("quantize: --model is required (a model folder or a Hugging Face repo id)");
  if (!weights) throw UsageError("quantize: --weights q8 or q4 is required");

  const std::string dir = resolve_model(model.model, model.source);
  const auto start = std::chrono::steady_clock::now();
  const CacheFill fill = quantize_into_cache(dir, *weights, cache, threads, conversion_progress(*weights));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (fill.outcome == CacheFill::Outcome::WriteFailed)
    fail("quantize: converted ", dir, " but could not write the weight cache file ", fill.path, " (see the warning above)");
  nlohmann::ordered_json j = {{"model", dir},
                              {"weights", weight_format_name(*weights)},
                              {"cache_file", fill.path},
                              {"status", fill.outcome == CacheFill::Outcome::Written ? "written" : "already cached"},
                              {"matrix_bytes", fill.matrix_bytes},
                              {"seconds", seconds}};
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace qvl::cli
