// qvl run: one prompt about zero or more images; the answer streams to stdout
// (text) or comes back as one JSON object (--output-format json).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/run_pages.h"
#include "engine/compute_threads.h"
#include "engine/engine.h"
#include "engine/parallelism.h"
#include "image/image.h"
#include "media/intake.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int cmd_run(int argc, char** argv) {
  const auto t_start = std::chrono::steady_clock::now();
  Args args("run", "--model M [--image FILE ...] [--video FILE ...] --prompt TEXT [options]",
            "Answers one prompt about zero or more images and videos (placed before the prompt text in one\n"
            "user turn, in the order given).\n"
            "A PDF (known by its first bytes, %PDF-) gives its pages as images, in order (--pages, --dpi);\n"
            "with --per-page each page is asked on its own instead, one answer per page.\n"
            "Text output streams the answer to stdout; --output-format json prints one object with text,\n"
            "token_ids, usage, timings and finish_reason.");
  ModelChoice model;
  EngineParams requested;
  // One prompt, each image encoded once: a cached copy of its embeddings
  // could never be used and would only add to the peak memory.
  requested.image_cache_bytes = 0;
  PromptOptions prompt;
  GenerateRequest req;
  std::string question, json_schema, format = "text";
  bool json = false, verbose = false, per_page = false, progress = false;
  int parallel = 1;
  visit_options(model, args);
  visit_options(requested, args);
  visit_options(prompt, args);
  PdfRenderRequest pdf;
  visit_options(pdf, args);
  MemoryAdmissionOptions memory;
  visit_memory_budget(memory, args);
  args(question, "prompt", "TEXT", "the question or instruction");
  args(json, "json", "answer with a JSON object (constrained decoding)");
  args(json_schema, "json-schema", "FILE", "answer with JSON valid against the JSON Schema in FILE (constrained decoding)");
  visit_options(req, args);
  args(format, "output-format", "FORMAT", "the answer streamed as text, or one JSON object").choices({"text", "json"});
  args(verbose, "verbose", "timings and model details on stderr");
  args(per_page, "per-page",
       "ask the question of each page of the PDF (the one --image that is a PDF) on its own: the answers in page "
       "order, text after a \"<!-- page N -->\" line, json one object per page and line");
  args(parallel, "parallel", "N",
       "with --per-page, pages asked at once, their answers decoded together and written in page order; "
       "default: what serve would choose from memory and cores")
      .range(1, 64);
  args(progress, "progress",
       "with --per-page, a line per page on stderr (\"page 3/10: 500 tokens, 41.2 s\"); on when stderr is a terminal");
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("run: unexpected argument '", args.positional()[0], "' (see qvl run --help)"));
  if (!args.has("prompt")) throw UsageError("run: --prompt is required (see qvl run --help)");

  if (args.has("system")) req.messages.push_back({"system", {{prompt.system, nullptr}}});
  Message user{"user", {}};
  const auto t_images = std::chrono::steady_clock::now();
  bool any_pdf = false;
  std::optional<PageRun> pages;  // --per-page: the PDF, and where its page goes in the user message
  MemoryAdmission admission(cli_memory(memory));
  MediaIntake intake{MediaLimits{}, &admission};
  EngineParams params = engine_params(model, requested);
  params.memory = &admission;  // the KV caches counted beside the media
  const MediaHint given{MediaKind::Image, prompt.video_options(video_token_budget(params)), pdf};
  // A file is what its bytes say (a PDF among the --image files gives its
  // pages); `hint` (--image or --video) only where they say nothing.
  auto add_medium = [&](const std::string& path, MediaKind hint) {
    std::vector<uint8_t> bytes;
    try {
      bytes = read_media_bytes(path, max_media_bytes(intake.limits()));
    } catch (const Error& e) {
      fail(media_kind_name(hint), " ", path, ": ", e.what());
    }
    const std::string what = cat(media_kind_name(media_kind(bytes, hint)), " ", path);
    MediaHint h = given;
    h.kind = hint;
    const bool pdf_per_page = per_page && media_kind(bytes, hint) == MediaKind::Pdf;
    if (pdf_per_page && pages) throw UsageError("run: --per-page takes one PDF, and two --image files are PDFs");
    MediaIntake::Medium m;
    try {
      // --per-page: the PDF's pages are planned here and rendered each in its turn (run_pages).
      m = intake.take(bytes, h, path, pdf_per_page ? MediaIntake::PdfPages::Plan : MediaIntake::PdfPages::Render);
    } catch (const Error& e) {
      fail(what, ": ", e.what());
    } catch (const MediaRefusal& e) {
      fail_over_budget(what, e);
    }
    if (m.pdf && pdf_per_page) {
      any_pdf = true;
      pages.emplace(PageRun{{}, user.parts.size(), std::move(*m.pdf), path});
      user.parts.push_back({});  // each page in turn (run_pages)
      return;
    }
    if (m.pdf) {
      any_pdf = true;
      for (const PdfPagePlan& page : m.pdf->pages)
        if (page.dpi_lowered || verbose)
          std::cerr << path << ": page " << page.index + 1 << " rendered at " << page.dpi << " dpi (" << page.width
                    << "x" << page.height << " px"
                    << (page.dpi_lowered ? ", lowered from --dpi to fit the per-page pixel cap" : "") << ")\n";
    }
    for (std::shared_ptr<const Image>& image : m.images) user.parts.push_back({"", std::move(image)});
    if (const std::shared_ptr<const Video>& video = m.video) {
      if (verbose)
        std::cerr << path << ": " << video->frames.size() << " of " << video->total_frames << " frames sampled ("
                  << video->width << "x" << video->height << ", " << video->fps << " fps, " << video->codec << ")\n";
      user.parts.push_back({"", nullptr, video});
    }
  };
  // Images and videos enter the prompt in the order they were given.
  size_t next_image = 0, next_video = 0;
  for (const std::string& name : args.given_order()) {
    if (name == "image") add_medium(prompt.images[next_image++], MediaKind::Image);
    if (name == "video") add_medium(prompt.videos[next_video++], MediaKind::Video);
  }
  if (!any_pdf && (args.has("pages") || args.has("dpi")))
    throw UsageError(cat("run: --", args.has("pages") ? "pages" : "dpi", " applies to PDF files, and no --image is one"));
  if (per_page && !pages) throw UsageError("run: --per-page needs a PDF among the --image files, and none is one");
  if (args.has("progress") && !per_page) throw UsageError("run: --progress reports the pages of --per-page, which is not given");
  const double image_decode_ms = ms_since(t_images);
  user.parts.push_back({question, nullptr});
  req.messages.push_back(std::move(user));

  if (pages) {
    // --per-page: a KV cache per page in flight, each the context a lone
    // question has (--ctx-size), as many as serve would run (parallelism.h).
    MemoryFacts facts = memory_facts(params, memory.memory_budget_bytes, kAutoMediaBudget);
    facts.sequence_tokens = params.ctx_size;
    ParallelismAsked asked;
    if (args.has("parallel")) asked.sequences = parallel;
    const Parallelism chosen = choose_parallelism(facts, compute_threads(params.threads), asked);
    params.slots = std::max(1, std::min<int>(chosen.sequences, static_cast<int>(pages->pdf.pages.size())));
    params.ctx_size *= params.slots;
  } else if (args.has("parallel")) {
    throw UsageError("run: --parallel applies to --per-page, which is not given");
  }
  std::unique_ptr<Engine> engine = Engine::create(params);
  const EngineInfo& info = engine->info();
  if (verbose)
    std::cerr << "loaded " << info.model_dir << " (" << weight_format_name(info.weights)
              << (info.fast_matmul ? ", fast bf16 matmul" : "") << ", " << info.threads << " threads) in "
              << info.load_ms << " ms\n";
  if (verbose && !info.unused_tensors.empty()) {
    const std::vector<std::string>& unused = info.unused_tensors;
    std::cerr << unused.size() << " tensor(s) in the checkpoint are not used:";
    for (size_t i = 0; i < unused.size() && i < 10; ++i) std::cerr << " " << unused[i];
    std::cerr << (unused.size() > 10 ? " ...\n" : "\n");
  }

  if (json) req.response_format.type = ResponseFormat::Type::JsonObject;
  if (args.has("json-schema")) {
    const std::string path = json_schema;
    std::ifstream f(path, std::ios::binary);
    if (!f) fail("--json-schema ", path, ": cannot open the file");
    std::ostringstream text;
    text << f.rdbuf();
    req.response_format = {ResponseFormat::Type::JsonSchema, text.str()};
  }
  if (pages) {
    pages->request = std::move(req);
    pages->json = format == "json";
    // On a terminal a page's tokens are counted as they come, unless the
    // answers are written to a terminal too (the counting line would run
    // into them).
    const bool terminal = isatty(STDERR_FILENO);
    pages->progress = progress || terminal;
    pages->live = terminal && !isatty(STDOUT_FILENO);
    pages->start = t_start;
    run_pages(*engine, std::move(*pages), &admission);
    return 0;
  }
  try {
    engine->validate(req);
  } catch (const FieldError& e) {
    fail(args.has("json-schema") ? "--json-schema " + json_schema + ": " : "", e.what());
  }

  GenerateCallbacks cb;
  if (format == "text") {
    cb.on_text = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    };
  }
  GenerateResult r = engine->generate(req, cb);
  const Timings& t = r.timings;
  if (format == "text") {
    std::fputs("\n", stdout);
  } else {
    nlohmann::json j;
    j["text"] = r.text;
    if (r.reasoning) j["reasoning"] = *r.reasoning;  // a Thinking model's, before "</think>"; text is the reply
    j["token_ids"] = r.token_ids;
    j["finish_reason"] = finish_reason_name(r.finish_reason);
    j["usage"] = {{"prompt_tokens", r.prompt_tokens},
                  {"completion_tokens", r.completion_tokens},
                  {"total_tokens", r.prompt_tokens + r.completion_tokens}};
    j["timings"] = {{"load_ms", info.load_ms},
                    {"image_decode_ms", image_decode_ms},
                    {"image_preprocess_ms", t.preprocess_ms},
                    {"vision_ms", t.vision_ms},
                    {"prefill_ms", t.prefill_ms},
                    {"prefill_tok_s", t.prefill_tok_s()},
                    {"first_token_ms", t.first_token_ms},
                    {"decode_ms", t.decode_ms},
                    {"decode_tok_s", t.decode_tok_s()}};
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (verbose) {
    std::fprintf(stderr,
                 "prompt %lld tokens, completion %lld tokens (%s)\n"
                 "load %.0f ms | image decode %.1f ms | preprocess %.1f ms | vision %.1f ms | prefill %.1f ms "
                 "(%.1f tok/s) | first token %.1f ms | decode %.1f tok/s\n",
                 static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.completion_tokens),
                 finish_reason_name(r.finish_reason), info.load_ms, image_decode_ms, t.preprocess_ms, t.vision_ms,
                 t.prefill_ms, t.prefill_tok_s(), t.first_token_ms, t.decode_tok_s());
  }
  return 0;
}

}  // namespace qvl::cli
