#include "cli/run_pages.h"

#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
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

// One page of the run: rendered, asked, its answer held until its turn.
struct Page {
  int k = 0;     // its place in the run, from 1
  int page = 0;  // the PDF's page number
  Clock::time_point start;
  double started_ms = 0, render_ms = 0;
  GenerateRequest request;  // the question with this page in it
  GenerateCallbacks cb;
  Engine::RunPtr run;
  int slot = -1;
  bool head = false;        // its answer is the one being written (earlier pages are out)
  std::string pending;      // text decided before its turn
  int64_t tokens = 0;       // pieces so far: a token whose text is not yet whole UTF-8 comes with the next
  std::optional<GenerateResult> result;
  std::exception_ptr error;  // it could not be rendered or asked: reported in its turn
};

// The pages in page order from the one being written; up to the engine's
// slots of them are asked at once, so their answers decode together (one
// read of the weights per step for all) and, one flow, are encoded one
// after another (GenerateRequest::flow): page 1 comes as soon as alone, and
// each next page joins as soon as it is in. The answers are written in page
// order all the same, a page's text held until the pages before it are out.
class PageRunner {
 public:
  PageRunner(Engine& engine, PageRun& run, MemoryAdmission* admission)
      : engine_(engine), run_(run), admission_(admission), n_(static_cast<int>(run.pdf.pages.size())) {
    for (int s = engine.slots() - 1; s >= 0; --s) free_slots_.push_back(s);
  }

  void run() {
    while (next_ <= n_ || !flight_.empty()) {
      start_pages();
      step();
      write_finished();
    }
  }

 private:
  // Starts pages while slots are free. A page over the memory budget waits
  // for a page in flight to end (and fails alone, as it did one at a time).
  void start_pages() {
    while (!stopped_ && next_ <= n_ && !free_slots_.empty()) {
      const PdfPagePlan& plan = run_.pdf.pages[static_cast<size_t>(next_ - 1)];
      auto p = std::make_unique<Page>();
      p->k = next_;
      p->page = plan.index + 1;
      p->start = Clock::now();
      p->started_ms = std::chrono::duration<double, std::milli>(p->start - run_.start).count();
      p->request = run_.request;
      p->request.flow = "pages";
      MessagePart& part = p->request.messages.back().parts[run_.slot];
      try {
        // An intake per page: it counts what its request holds, and a page's
        // request is that page alone. The pixels stay reserved from the
        // budget with the image, until it is dropped after the page's answer.
        MediaIntake intake{MediaLimits{}, admission_};
        part.image = intake.pdf_page(run_.pdf.doc, plan, run_.path);
      } catch (const Error& e) {
        p->error = std::make_exception_ptr(Error(cat("PDF ", run_.path, ": page ", p->page, ": ", e.what())));
      } catch (const MediaRefusal& e) {
        if (!flight_.empty()) return;  // again when a page in flight has ended
        try {
          fail_over_budget(cat("PDF ", run_.path, ", page ", p->page), e);
        } catch (...) {
          p->error = std::current_exception();
        }
      }
      p->render_ms = seconds_since(p->start) * 1000;
      if (!p->error) {
        if (plan.dpi_lowered)
          std::cerr << run_.path << ": page " << p->page << " rendered at " << plan.dpi << " dpi (" << plan.width
                    << "x" << plan.height << " px), lowered from --dpi to fit the per-page pixel cap\n";
        try {
          engine_.validate(p->request);
          set_callbacks(*p);
          p->slot = free_slots_.back();
          p->run = engine_.begin(p->request, p->cb, p->slot);
          free_slots_.pop_back();
        } catch (const FieldError& e) {
          p->error = std::make_exception_ptr(Error(cat("PDF ", run_.path, ": page ", p->page, ": ", e.what())));
        } catch (...) {
          p->error = std::current_exception();
        }
      }
      if (p->error) stopped_ = true;  // no page after a failed one is started
      flight_.push_back(std::move(p));
      ++next_;
      if (flight_.size() == 1) become_head(*flight_.front());
    }
  }

  void set_callbacks(Page& p) {
    Page* page = &p;
    if (!run_.json) {
      p.cb.on_text = [page](std::string_view piece) {
        if (page->head) {
          std::fwrite(piece.data(), 1, piece.size(), stdout);
          std::fflush(stdout);
        } else {
          page->pending.append(piece);
        }
        return true;
      };
    }
    p.cb.on_delta = [this, page](const ChoiceDelta& d) {
      if (d.choice != 0) return true;
      ++page->tokens;
      if (page->head) show_live(*page);
      return true;
    };
  }

  void show_live(const Page& p) {
    if (!run_.live || Clock::now() < next_live_) return;
    std::cerr << "\r" << progress_line(p.k, n_, p.tokens, seconds_since(p.start), 0, false) << "\033[K" << std::flush;
    next_live_ = Clock::now() + std::chrono::milliseconds(250);
  }

  // Its turn to be written: the header and what it has said so far.
  void become_head(Page& p) {
    p.head = true;
    if (p.error || run_.json) return;
    std::printf("<!-- page %d -->\n\n", p.page);
    std::fwrite(p.pending.data(), 1, p.pending.size(), stdout);
    std::fflush(stdout);
    std::string().swap(p.pending);
  }

  // One unit of work for every page in flight (Engine::step: the decoding
  // pages together, an encoding one in pieces between their tokens).
  void step() {
    runs_.clear();
    for (const auto& p : flight_)
      if (p->run) runs_.push_back(p.get());
    if (runs_.empty()) return;
    std::vector<Engine::Run*> runs;
    for (Page* p : runs_) runs.push_back(p->run.get());
    results_.resize(runs.size());
    engine_.step(runs, results_);
    for (size_t i = 0; i < runs_.size(); ++i) {
      Page& p = *runs_[i];
      if (results_[i].more && !results_[i].error) continue;
      if (results_[i].error) {
        p.error = results_[i].error;
        stopped_ = true;
      } else {
        p.result = engine_.end(*p.run);
      }
      p.run.reset();
      free_slots_.push_back(p.slot);
      // This page's pixels, before the next one renders.
      p.request.messages.back().parts[run_.slot].image.reset();
    }
  }

  // Writes the pages at the head that are done, in order; the first failed
  // one ends the run with its error.
  void write_finished() {
    while (!flight_.empty() && (flight_.front()->result || flight_.front()->error)) {
      Page& p = *flight_.front();
      if (p.error) std::rethrow_exception(p.error);
      const GenerateResult& r = *p.result;
      if (run_.json) {
        std::cout << page_json(p.page, r, p.render_ms, p.started_ms, engine_.info().load_ms)
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << std::endl;
      } else {
        std::fputs("\n\n", stdout);
        std::fflush(stdout);
      }
      const double first_token_s = (p.render_ms + r.timings.first_token_ms) / 1000;
      if (run_.progress)
        std::cerr << (run_.live ? "\r" : "")
                  << progress_line(p.k, n_, r.completion_tokens, seconds_since(p.start), first_token_s, true)
                  << (run_.live ? "\033[K\n" : "\n") << std::flush;
      flight_.pop_front();
      if (!flight_.empty()) become_head(*flight_.front());
    }
  }

  Engine& engine_;
  PageRun& run_;
  MemoryAdmission* admission_;
  const int n_;
  int next_ = 1;         // the next page to start
  bool stopped_ = false;  // a page failed: none after it starts
  std::deque<std::unique_ptr<Page>> flight_;
  std::vector<int> free_slots_;
  std::vector<Page*> runs_;
  std::vector<Engine::StepResult> results_;
  Clock::time_point next_live_ = Clock::now();
};

}  // namespace

void run_pages(Engine& engine, PageRun run, MemoryAdmission* admission) { PageRunner(engine, run, admission).run(); }

}  // namespace qvl::cli
