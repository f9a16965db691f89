#include "cli/run_pages.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "page 3/10: 500 tokens, 41.2 s (first token 12.0 s)": the page's tokens and
// seconds since its rendering began; while it runs (not done), so far.
std::string progress_line(int k, int n, int64_t tokens, double seconds, double first_token_s, bool done) {
  char line[160];
  const char* unit = tokens == 1 ? "token" : "tokens";
  if (done)
    std::snprintf(line, sizeof line, "page %d/%d: %lld %s, %.1f s (first token %.1f s)", k, n,
                  static_cast<long long>(tokens), unit, seconds, first_token_s);
  else
    std::snprintf(line, sizeof line, "page %d/%d: %lld %s, %.1f s", k, n, static_cast<long long>(tokens), unit, seconds);
  return line;
}

nlohmann::json page_json(int page, const GenerateResult& r, double render_ms, double started_ms, double load_ms) {
  const Timings& t = r.timings;
  nlohmann::json j;
  j["page"] = page;
  j["text"] = r.text;
  if (r.reasoning) j["reasoning"] = *r.reasoning;
  j["token_ids"] = r.token_ids;
  j["finish_reason"] = finish_reason_name(r.finish_reason);
  j["usage"] = {{"prompt_tokens", r.prompt_tokens},
                {"completion_tokens", r.completion_tokens},
                {"total_tokens", r.prompt_tokens + r.completion_tokens}};
  j["timings"] = {{"load_ms", load_ms},
                  {"started_ms", started_ms},  // since the command started, when this page's rendering began
                  {"image_decode_ms", render_ms},
                  {"image_preprocess_ms", t.preprocess_ms},
                  {"vision_ms", t.vision_ms},
                  {"prefill_ms", t.prefill_ms},
                  {"prefill_tok_s", t.prefill_tok_s()},
                  {"first_token_ms", t.first_token_ms},
                  {"decode_ms", t.decode_ms},
                  {"decode_tok_s", t.decode_tok_s()}};
  return j;
}

}  // namespace

void run_pages(Engine& engine, PageRun run, MemoryAdmission* admission) {
  const int n = static_cast<int>(run.pdf.pages.size());
  for (int k = 1; k <= n; ++k) {
    const PdfPagePlan& plan = run.pdf.pages[k - 1];
    const int page = plan.index + 1;
    const Clock::time_point page_start = Clock::now();
    const double started_ms = std::chrono::duration<double, std::milli>(page_start - run.start).count();
    MessagePart& part = run.request.messages.back().parts[run.slot];
    {
      // An intake per page: it counts what its request holds, and a page's
      // request is that page alone. The pixels stay reserved from the budget
      // with the image, until it is dropped after the page's answer.
      MediaIntake intake{MediaLimits{}, admission};
      try {
        part.image = intake.pdf_page(run.pdf.doc, plan, run.path);
      } catch (const Error& e) {
        fail("PDF ", run.path, ": page ", page, ": ", e.what());
      } catch (const MediaRefusal& e) {
        fail_over_budget(cat("PDF ", run.path, ", page ", page), e);
      }
    }
    const double render_ms = seconds_since(page_start) * 1000;
    if (plan.dpi_lowered)
      std::cerr << run.path << ": page " << page << " rendered at " << plan.dpi << " dpi (" << plan.width << "x"
                << plan.height << " px), lowered from --dpi to fit the per-page pixel cap\n";
    try {
      engine.validate(run.request);
    } catch (const FieldError& e) {
      fail("PDF ", run.path, ": page ", page, ": ", e.what());
    }

    int64_t tokens = 0;  // pieces so far: a token whose text is not yet whole UTF-8 comes with the next
    Clock::time_point next_live = Clock::now();
    GenerateCallbacks cb;
    if (!run.json) {
      std::printf("<!-- page %d -->\n\n", page);
      std::fflush(stdout);
      cb.on_text = [](std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
      };
    }
    cb.on_delta = [&](const ChoiceDelta& d) {
      if (d.choice != 0) return true;
      ++tokens;
      if (run.live && Clock::now() >= next_live) {
        std::cerr << "\r" << progress_line(k, n, tokens, seconds_since(page_start), 0, false) << "\033[K" << std::flush;
        next_live = Clock::now() + std::chrono::milliseconds(250);
      }
      return true;
    };
    const GenerateResult r = engine.generate(run.request, cb);
    part.image.reset();  // this page's pixels, before the next one renders
    if (run.json) {
      std::cout << page_json(page, r, render_ms, started_ms, engine.info().load_ms)
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << std::endl;
    } else {
      std::fputs("\n\n", stdout);
      std::fflush(stdout);
    }
    const double first_token_s = (render_ms + r.timings.first_token_ms) / 1000;
    if (run.progress)
      std::cerr << (run.live ? "\r" : "")
                << progress_line(k, n, r.completion_tokens, seconds_since(page_start), first_token_s, true)
                << (run.live ? "\033[K\n" : "\n") << std::flush;
  }
}

}  // namespace qvl::cli
