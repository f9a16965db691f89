// Every option the qvl commands share, declared once per group:
// each visit_options() declares, on an Args, the members of one struct it
// sets, with the flag's name, value, range or choices, help and environment
// variable (util/args.h). The defaults are the structs' member initialisers
// (EngineParams in engine/engine.h, ModelSourceOptions in io/model_source.h,
// ServerOptions in server/server_options.h, ...), so the engine, --help and
// docs/api.md (compared with `qvl serve --help-markdown` by a test) cannot
// disagree. An option several commands take (--model, the repetition guard)
// is declared here once; options of one command only are declared in its
// cmd_*.cpp the same way.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "media/admission.h"
#include "media/intake.h"
#include "video/video.h"
#include "engine/engine.h"
#include "io/model_source.h"
#include "io/model_task.h"
#include "pdf/pdf_pages.h"
#include "server/server_options.h"
#include "util/args.h"

namespace qvl::cli {

// --model and where a repo id is downloaded from.
struct ModelChoice {
  std::string model;  // a local folder or a hub repo id ("Qwen/Qwen3-VL-2B-Instruct"); empty: not given
  ModelSourceOptions source;
};

// The first user turn's images and the system message (run, chat).
struct PromptOptions {
  std::vector<std::string> images;  // image files, in order
  std::vector<std::string> videos;  // video files, in order (Args::given_order interleaves them with images)
  std::string system;               // empty: no system message
  // Frame sampling of every --video (the model's video processor defaults),
  // within the engine's video-token budget (EngineInfo::video_budget).
  double video_fps = 2.0;
  int video_max_frames = 768;
  // Checked as every front end checks them (check_video_options).
  VideoOptions video_options(const VideoTokenBudget& budget) const {
    VideoOptions o;
    o.fps = video_fps;
    o.max_frames = video_max_frames;
    o.min_frames = std::min<int64_t>(FrameSampling{}.min_frames, video_max_frames);
    o.budget = budget;
    try {
      check_video_options(o, false);
    } catch (const VideoOptionError& e) {
      throw UsageError(cat("--video-", e.key() == "fps" ? "fps" : "max-frames", " ", e.what()));
    }
    return o;
  }
};

// --task: what the model folder is used for (io/model_task.h); unset: what
// the folder ships, else chat (qvl serve), or what the command is (qvl
// embed, qvl rerank: require_task).
void visit_task(std::optional<ModelTask>& task, Args& v);
// --revision, --offline, --hf-token, --source, --endpoint.
void visit_options(ModelSourceOptions& o, Args& v);
// --model, then the model-source options.
void visit_options(ModelChoice& m, Args& v);
// --weights, --precision, --threads, --ctx-size, --kv-type, --batch,
// --min-pixels, --max-pixels, --max-video-tokens, --image-cache-mb.
void visit_options(EngineParams& p, Args& v);
// --weight-cache, --weight-cache-max-gb.
void visit_options(WeightCacheOptions& c, Args& v);
// --repetition-guard, --repetition-guard-repeats: the CLI's setting for its
// answers, and the server's default for requests that set none.
void visit_options(RepetitionGuardOptions& g, Args& v);
// --max-tokens, --temperature, --top-k, --top-p, --min-p,
// --repetition-penalty, --presence-penalty, --frequency-penalty, --seed,
// --stop (repeatable), --ignore-eos and the repetition guard. Sampling
// options not given stay unset: the model's generation_config applies.
void visit_options(GenerateRequest& r, Args& v);
// --image, --video (repeatable), --video-fps, --video-max-frames, --system.
void visit_options(PromptOptions& p, Args& v);
// --pages, --dpi: how each PDF among the --image files becomes page images.
void visit_options(PdfRenderRequest& r, Args& v);
// --memory-budget: the one budget of decoded media and KV caches
// (media/admission.h) that run, chat and serve hold.
void visit_memory_budget(MemoryAdmissionOptions& o, Args& v);
// The budget of a command that answers one user (run, chat): `o` with no
// time limit on decoding (nobody else waits).
MemoryAdmissionOptions cli_memory(MemoryAdmissionOptions o);
// A refusal of the budget as one line: `what` ("image cat.png"), why, the flag.
[[noreturn]] void fail_over_budget(const std::string& what, const MediaRefusal& e);
// Everything `qvl serve` takes beyond the model and the engine: network,
// limits, security, scheduling, jobs, logs, the repetition guard.
void visit_options(ServerOptions& o, Args& v);

// The engine parameters once the command line is parsed: `requested` with
// the model folder (a repo id resolved, downloading if needed) and a
// weight-conversion progress line on stderr when it takes > 1 s. Throws
// UsageError without --model.
EngineParams engine_params(const ModelChoice& model, EngineParams requested);

// EngineParams::max_video_tokens in the units of the model in
// params.model_dir (its video_preprocessor_config), for front ends that
// sample a video's frames before the engine is loaded (as
// EngineInfo::video_budget gives them after).
VideoTokenBudget video_token_budget(const EngineParams& params);

// A weight-conversion progress callback: one line on stderr (redrawn on a
// terminal) once conversion has taken over 1 s.
std::function<void(size_t, size_t)> conversion_progress(WeightFormat weights);

}  // namespace qvl::cli
