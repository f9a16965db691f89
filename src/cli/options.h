// Flag groups shared by the commands that load a model (run, chat, bench and,
// later, serve), declared once (STYLE.md 7), with the code that turns parsed
// flags into engine parameters.
#pragma once

#include <vector>

#include "engine/engine.h"
#include "util/args.h"

namespace qvl::cli {

// --model, --weights, --precision, --threads, --ctx-size, --batch, --min-pixels,
// --max-pixels, --image-cache-mb, plus the model-source flags (--revision, --offline, ...).
std::vector<Flag> model_flags();
// --max-tokens, --temperature, --top-k, --top-p, --min-p,
// --repetition-penalty, --presence-penalty, --frequency-penalty, --seed,
// --stop (repeatable), --ignore-eos.
std::vector<Flag> sampling_flags();

// Resolves --model (a folder or a repo id, downloading if needed) and reads
// the model flags. Prints conversion progress on stderr when it takes > 1 s.
EngineParams engine_params(const Args& args);
// Sampling flags into a request (unset flags stay unset: the model's
// generation_config then applies).
void apply_sampling(const Args& args, GenerateRequest& request);

}  // namespace qvl::cli
