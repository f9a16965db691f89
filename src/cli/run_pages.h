// qvl run --per-page: a PDF's pages asked one at a time, each page its own
// prompt (the question with the PDF replaced by that one page), as the
// server's per-page jobs run them, with the model loaded once. The answers go
// to stdout in page order (text: each after a "<!-- page N -->" line; json:
// one object per page and line as each page ends), and a line per page on
// stderr says how it went ("page 3/10: 500 tokens, 41.2 s").
#pragma once

#include <chrono>
#include <string>

#include "engine/engine.h"
#include "media/intake.h"

namespace qvl::cli {

struct PageRun {
  GenerateRequest request;  // the question; its last message's parts[slot] is the page
  size_t slot = 0;
  MediaIntake::PlannedPdf pdf;  // opened and sized, nothing rendered yet
  std::string path;             // the PDF's file name, for errors
  bool json = false;            // one JSON object per page and line, else the text streamed
  bool progress = false;        // a line per page on stderr
  bool live = false;            // and a line that counts the tokens as they come (stderr is a terminal)
  std::chrono::steady_clock::time_point start;  // the command's start: each page's started_ms counts from it
};

// Renders each page right before its turn (one page's pixels held at a time,
// reserved from `admission`), asks it, writes its answer. Throws qvl::Error
// naming the page when one cannot be rendered or asked.
void run_pages(Engine& engine, PageRun run, MemoryAdmission* admission);

}  // namespace qvl::cli
