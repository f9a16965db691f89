// qvl embed: one vector per input with a Qwen3-VL-Embedding checkpoint, as
// one JSON object on stdout. Every --text, --image (a PDF: each page), --video
// and each item of --inputs is one input; all of them go through the model
// in one batched call (engine/retrieval.h).
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/retrieval_inputs.h"
#include "engine/retrieval.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {

int cmd_embed(int argc, char** argv) {
  Args args("embed", "--model M (--text T | --image FILE | --video FILE | --inputs FILE.json) ... [options]",
            "Prints one JSON object with an embedding per input (Qwen3-VL-Embedding). Each --text, --image (a\n"
            "PDF: one input per page), --video and each item of --inputs (a JSON array of strings or objects\n"
            "{text, image, video, instruction}, as the official scripts take) is one input, in the order given.\n"
            "The vectors are unit length; --dimensions keeps their first N components, normalised again.");
  ModelChoice model;
  EngineParams requested;
  std::optional<ModelTask> task;
  std::vector<std::string> texts, images, videos;
  std::string inputs, instruction;
  int64_t dimensions = 0;
  PromptOptions video;  // --video-fps, --video-max-frames
  PdfRenderRequest pdf;
  visit_options(model, args);
  visit_task(task, args);
  visit_options(requested, args);
  args(texts, "text", "TEXT", "a text input (repeatable)");
  args(images, "image", "FILE", "an image input, or a PDF: one input per page (repeatable)");
  args(videos, "video", "FILE", "a video input (repeatable)");
  args(inputs, "inputs", "FILE", "a JSON array of inputs: strings, or objects {text, image, video, instruction} "
                                 "with files relative to FILE's folder");
  args(instruction, "instruction", "TEXT", "the task instruction of every input without its own")
      .unset("Represent the user's input.");
  args(dimensions, "dimensions", "N", "keep the first N components of each vector (MRL), normalised again")
      .range(1, 1 << 20)
      .unset("the model's hidden size");
  args(video.video_fps, "video-fps", "FPS", "frames sampled per second of each --video").range(kMinVideoFps, kMaxVideoFps);
  args(video.video_max_frames, "video-max-frames", "N", "at most this many frames of each --video").range(2, kMaxVideoFrames);
  visit_options(pdf, args);
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("embed: unexpected argument '", args.positional()[0], "' (see qvl embed --help)"));
  refuse_chat_pixel_options(args, "embed");
  if (texts.empty() && images.empty() && videos.empty() && inputs.empty())
    throw UsageError("embed: give at least one --text, --image, --video or --inputs (see qvl embed --help)");

  EngineParams params = engine_params(model, requested);
  require_task(ModelTask::Embed, task, params.model_dir);
  RetrievalInputs reader(pdf, video.video_options(video_token_budget(params)));
  std::vector<LabelledInput> labelled =
      command_line_inputs(args, reader, texts, images, videos, inputs, "text", "image", "video");
  std::vector<RetrievalInput> all;
  for (LabelledInput& in : labelled) all.push_back(std::move(in.input));

  std::unique_ptr<Engine> engine = Engine::create(params);
  EmbedOptions options;
  if (args.has("instruction")) options.instruction = instruction;
  options.dimensions = dimensions;
  const EmbedResult r = embed(*engine, all, options);

  nlohmann::ordered_json out;
  out["model"] = params.model_dir;
  out["dimensions"] = r.embeddings.empty() ? 0 : r.embeddings[0].size();
  out["data"] = nlohmann::ordered_json::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < r.embeddings.size(); ++i) {
    out["data"].push_back({{"index", i}, {"source", labelled[i].source}, {"prompt_tokens", r.prompt_tokens[i]},
                           {"embedding", r.embeddings[i]}});
    tokens += r.prompt_tokens[i];
  }
  out["usage"] = {{"prompt_tokens", tokens}, {"total_tokens", tokens}};
  out["timings"] = retrieval_timings_json(r.timings);
  std::cout << out.dump() << "\n";
  std::cout.flush();
  if (!std::cout) fail("cannot write to stdout");
  return 0;
}

}  // namespace qvl::cli
