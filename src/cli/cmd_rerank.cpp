// qvl rerank: how well each document answers a query, with a
// Qwen3-VL-Reranker checkpoint, as one JSON object on stdout (results sorted
// by relevance_score, the reranker's score). Every --document,
// --document-image (a PDF: each page), --document-video and item of
// --documents is one document; all go through the model in one batched call.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/retrieval_inputs.h"
#include "engine/retrieval.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {

int cmd_rerank(int argc, char** argv) {
  Args args("rerank",
            "--model M --query TEXT [--query-image FILE] (--document T | --document-image FILE | --documents "
            "FILE.json) ... [options]",
            "Scores how well each document meets the query (Qwen3-VL-Reranker) and prints one JSON object with\n"
            "the results sorted by relevance_score (sigmoid of the model's yes-minus-no logit, also shown).\n"
            "Each --document, --document-image (a PDF: one document per page), --document-video and each item\n"
            "of --documents (a JSON array of strings or objects {text, image, video}) is one document.");
  ModelChoice model;
  EngineParams requested;
  std::optional<ModelTask> task;
  std::vector<std::string> texts, images, videos, query_images;
  std::string query, documents, instruction;
  int64_t top_n = 0;
  PromptOptions video;
  PdfRenderRequest pdf;
  visit_options(model, args);
  visit_task(task, args);
  visit_options(requested, args);
  args(query, "query", "TEXT", "the query's text");
  args(query_images, "query-image", "FILE", "an image of the query, before its text (repeatable)");
  args(texts, "document", "TEXT", "a text document (repeatable)");
  args(images, "document-image", "FILE", "an image document, or a PDF: one document per page (repeatable)");
  args(videos, "document-video", "FILE", "a video document (repeatable)");
  args(documents, "documents", "FILE", "a JSON array of documents: strings, or objects {text, image, video} with "
                                       "files relative to FILE's folder");
  args(instruction, "instruction", "TEXT", "the task instruction, verbatim")
      .unset("Given a search query, retrieve relevant candidates that answer the query.");
  args(top_n, "top-n", "N", "print only the N best results").range(1, 1 << 20).unset("all");
  args(video.video_fps, "video-fps", "FPS", "frames sampled per second of each video").range(kMinVideoFps, kMaxVideoFps);
  args(video.video_max_frames, "video-max-frames", "N", "at most this many frames of each video").range(2, kMaxVideoFrames);
  visit_options(pdf, args);
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("rerank: unexpected argument '", args.positional()[0], "' (see qvl rerank --help)"));
  refuse_chat_pixel_options(args, "rerank");
  if (!args.has("query") && query_images.empty())
    throw UsageError("rerank: give the query with --query and/or --query-image (see qvl rerank --help)");
  if (texts.empty() && images.empty() && videos.empty() && documents.empty())
    throw UsageError("rerank: give at least one --document, --document-image, --document-video or --documents");

  EngineParams params = engine_params(model, requested);
  require_task(ModelTask::Rerank, task, params.model_dir);
  RetrievalInputs reader(pdf, video.video_options(video_token_budget(params)));
  RetrievalInput q;
  if (args.has("query")) q.texts.push_back(query);
  for (const std::string& f : query_images)
    for (LabelledInput& in : reader.image_file(f))
      for (auto& img : in.input.images) q.images.push_back(std::move(img));
  std::vector<LabelledInput> labelled = command_line_inputs(args, reader, texts, images, videos, documents, "document",
                                                            "document-image", "document-video");
  std::vector<RetrievalInput> docs;
  for (LabelledInput& in : labelled) docs.push_back(std::move(in.input));

  std::unique_ptr<Engine> engine = Engine::create(params);
  RerankOptions options;
  if (args.has("instruction")) options.instruction = instruction;
  const RerankResult r = rerank(*engine, q, docs, options);

  std::vector<size_t> order(r.scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.scores[a].score > r.scores[b].score; });
  if (top_n > 0 && static_cast<size_t>(top_n) < order.size()) order.resize(top_n);
  nlohmann::ordered_json out;
  out["model"] = params.model_dir;
  out["results"] = nlohmann::ordered_json::array();
  for (size_t i : order)
    out["results"].push_back({{"index", i}, {"source", labelled[i].source}, {"relevance_score", r.scores[i].score},
                              {"logit", r.scores[i].logit}});
  int64_t tokens = 0;
  for (const RerankScore& s : r.scores) tokens += s.prompt_tokens;
  out["usage"] = {{"prompt_tokens", tokens}, {"total_tokens", tokens}};
  out["timings"] = retrieval_timings_json(r.timings);
  std::cout << out.dump() << "\n";
  std::cout.flush();
  if (!std::cout) fail("cannot write to stdout");
  return 0;
}

}  // namespace qvl::cli
