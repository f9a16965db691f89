// qvl chat: a conversation in the terminal. Each line is a user turn; images,
// videos and PDFs (their pages) added with --image / --video or `/image PATH`
// / `/video PATH` go into the next turn. Ctrl-C stops the
// current answer; at the prompt it ends the program (so does EOF or /exit).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"
#include "media/intake.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

// A signal handler can only reach static storage: these two flags are the
// whole of the state it shares with the chat loop.
std::atomic<bool> g_answering{false};
std::atomic<bool> g_cancel{false};

void on_sigint(int) {
  if (g_answering.load()) {
    g_cancel.store(true);
  } else {
    const char nl = '\n';
    (void)!write(STDOUT_FILENO, &nl, 1);
    _exit(130);
  }
}

// A file through the media intake into the next turn's parts: what its
// bytes say (an image, a clip, a PDF's pages), `given.kind` (/image or
// /video) only where they say nothing; false (and why on stderr) when it
// cannot be used.
bool load_into(MediaIntake& intake, const std::string& path, const MediaHint& given, std::vector<MessagePart>& pending) {
  std::string what = cat(media_kind_name(given.kind), " ", path);
  try {
    const std::vector<uint8_t> bytes = read_media_bytes(path, max_media_bytes(intake.limits()));
    what = cat(media_kind_name(media_kind(bytes, given.kind)), " ", path);
    MediaIntake::Medium m = intake.take(bytes, given, path);
    for (std::shared_ptr<const Image>& image : m.images) pending.push_back({"", std::move(image)});
    if (m.video) pending.push_back({"", nullptr, std::move(m.video)});
    return true;
  } catch (const Error& e) {
    std::cerr << "cannot use " << what << ": " << e.what() << "\n";
    return false;
  } catch (const MediaRefusal& e) {
    std::cerr << "cannot use " << what << ": " << e.what() << " (--memory-budget)\n";
    return false;
  }
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  Args args("chat", "--model M [--image FILE ...] [options]",
            "Talk with the model in the terminal. Commands: /image PATH, /video PATH (attach to the next\n"
            "message), /reset (new conversation), /exit. Ctrl-C stops the current answer.\n"
            "A PDF (known by its first bytes, %PDF-) gives its pages as images, in order (--pages, --dpi).");
  ModelChoice model;
  EngineParams requested;
  PromptOptions prompt;
  GenerateRequest base;
  visit_options(model, args);
  visit_options(requested, args);
  visit_options(prompt, args);
  visit_options(base, args);
  PdfRenderRequest pdf;
  visit_options(pdf, args);
  MemoryAdmissionOptions memory;
  visit_memory_budget(memory, args);
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("chat: unexpected argument '", args.positional()[0], "' (see qvl chat --help)"));
  // The conversation's media (held while in the history) and the KV caches in one budget.
  MemoryAdmission admission(cli_memory(memory));
  EngineParams params = engine_params(model, requested);
  params.memory = &admission;
  const MediaHint image_hint{MediaKind::Image, prompt.video_options(video_token_budget(params)), pdf};
  MediaHint video_hint = image_hint;
  video_hint.kind = MediaKind::Video;
  std::vector<MessagePart> pending;
  MediaIntake intake{MediaLimits{}, &admission};
  size_t next_image = 0, next_video = 0;
  for (const std::string& name : args.given_order()) {
    if (name == "image" && !load_into(intake, prompt.images[next_image++], image_hint, pending)) return 1;
    if (name == "video" && !load_into(intake, prompt.videos[next_video++], video_hint, pending)) return 1;
  }
  std::unique_ptr<Engine> engine = Engine::create(params);

  std::vector<Message> history;
  if (args.has("system")) history.push_back({"system", {{prompt.system, nullptr}}});
  const size_t system_messages = history.size();
  std::signal(SIGINT, on_sigint);
  const bool tty = isatty(STDIN_FILENO);
  std::string line;
  for (;;) {
    if (tty) {
      // Streamed piece by piece: GCC 12 warns (-Wrestrict, falsely) on the concatenated temporaries.
      if (!pending.empty()) std::cout << "[" << pending.size() << " image(s)/video(s)] ";
      std::cout << "> " << std::flush;
    }
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      history.resize(system_messages);
      pending.clear();
      // A new conversation's media: nothing held, no PDF pages counted yet.
      intake = MediaIntake{MediaLimits{}, &admission};
      engine->reset();
      continue;
    }
    if (line.rfind("/image ", 0) == 0) {
      load_into(intake, line.substr(7), image_hint, pending);
      continue;
    }
    if (line.rfind("/video ", 0) == 0) {
      load_into(intake, line.substr(7), video_hint, pending);
      continue;
    }
    Message user{"user", std::move(pending)};
    pending.clear();
    user.parts.push_back({line, nullptr});
    history.push_back(std::move(user));

    GenerateRequest req = base;
    req.messages = history;
    g_cancel = false;
    req.cancel = &g_cancel;
    GenerateCallbacks cb;
    cb.on_text = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    };
    g_answering = true;
    GenerateResult r;
    try {
      r = engine->generate(req, cb);
    } catch (const Error& e) {
      g_answering = false;
      history.pop_back();
      std::cerr << "error: " << e.what() << "\n";
      continue;
    }
    g_answering = false;
    std::cout << (r.finish_reason == FinishReason::Cancelled    ? " [stopped]\n"
                  : r.finish_reason == FinishReason::Repetition ? " [stopped: the answer was repeating itself]\n"
                                                    : "\n")
              << std::flush;
    history.push_back({"assistant", {{r.text, nullptr}}});
  }
  return 0;
}

}  // namespace qvl::cli
