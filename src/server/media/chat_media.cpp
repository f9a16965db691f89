#include "server/media/chat_media.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <tuple>

#include "media/admission.h"
#include "server/requests/api_error.h"
#include "server/documents/document_input.h"
#include "server/media/video_input.h"
#include "util/error.h"

namespace qvl {
namespace {

using Clock = std::chrono::steady_clock;

// A PDF part opened and planned, its pages rendered last.
struct PlannedPart {
  const MediaSource* source;
  MediaIntake::PlannedPdf pdf;
};

[[noreturn]] void refuse_medium(const MediaError& e, const std::string& param) {
  switch (e.kind()) {
    case MediaKind::Video: bad_request(param, cat("the video cannot be used: ", e.what()), "invalid_video");
    case MediaKind::Pdf: bad_request(param, cat("the PDF cannot be used: ", e.what()), "invalid_pdf");
    default: bad_request(param, cat("the image cannot be used: ", e.what()), "invalid_image");
  }
}

// One image_url or file part through the intake; a PDF comes back planned.
std::optional<PlannedPart> take_source(ChatRequest& out, const MediaSource& s, const ChatLimits& limits,
                                       MediaIntake& intake, int& pdf_parts) {
  const std::vector<uint8_t> bytes = fetch_source_bytes(s, limits);
  MediaHint hint;
  hint.kind = s.hint;
  hint.video = out.pending.video_defaults;
  hint.video.budget = limits.video_budget;
  hint.pdf.pages = s.pages;
  hint.pdf.dpi = s.dpi;
  const MediaKind kind = media_kind(bytes, s.hint);
  if (kind != MediaKind::Pdf && s.pdf_fields)
    bad_request(s.pages.empty() ? s.param + ".dpi" : s.pages_param,
                cat("'pages' and 'dpi' choose a PDF's pages, and '", s.url_param, "' holds a ", media_kind_name(kind)),
                "unsupported_parameter");
  MediaIntake::Medium m;
  try {
    m = intake.take(bytes, hint, s.url_param, MediaIntake::PdfPages::Plan);
  } catch (const MediaTimeLimit& e) {
    refuse_time_limit(e, kind == MediaKind::Image ? s.url_param : s.param);
  } catch (const MediaTooLarge& e) {
    refuse_too_large(e, s.url_param);
  } catch (const PdfRefusal& e) {
    refuse_pdf(e, s);
  } catch (const MediaError& e) {
    refuse_medium(e, kind == MediaKind::Image ? s.url_param : s.param);
  }
  MessagePart& part = out.generate.messages.at(s.message).parts.at(s.part);
  if (m.kind == MediaKind::Image) part.image = std::move(m.images.front());
  if (m.kind == MediaKind::Video) part.video = std::move(m.video);
  if (m.kind != MediaKind::Pdf) return std::nullopt;
  // The part's one counts as its pages now (earlier PDFs' pages included).
  ++pdf_parts;
  const int64_t media = out.media - pdf_parts + intake.pdf_pages_planned();
  if (media > limits.max_images)
    bad_request("messages",
                cat("the request has ", media, " images (", intake.pdf_pages_planned(),
                    " of them PDF pages), over the limit of ", limits.max_images, " per request"),
                "too_many_images");
  return PlannedPart{&s, std::move(*m.pdf)};
}

// Every planned PDF's pages rendered through the intake, each document's in
// place of its part (later parts first, so earlier indices stay put).
void render_pages(ChatRequest& out, std::vector<PlannedPart>& planned, MediaIntake& intake) {
  if (planned.empty()) return;
  try {
    intake.check_planned_pages_fit();
  } catch (const PdfRefusal& e) {
    refuse_pdf(e, *planned.front().source);
  }
  std::vector<std::vector<MessagePart>> rendered(planned.size());
  // Render in the order of the request (a deadline cuts the last pages), insert from the end.
  for (size_t d = 0; d < planned.size(); ++d) {
    const MediaSource& s = *planned[d].source;
    for (const PdfPagePlan& p : planned[d].pdf.pages) {
      std::shared_ptr<const Image> image;
      try {
        image = intake.pdf_page(planned[d].pdf.doc, p, s.param);
      } catch (const MediaTimeLimit& e) {
        refuse_time_limit(e, s.param);
      } catch (const Error& e) {
        bad_request(s.param, cat("the PDF cannot be rendered: ", e.what()), "invalid_pdf");
      }
      rendered[d].push_back({"", std::move(image)});
    }
  }
  std::vector<size_t> order(planned.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(planned[a].source->message, planned[a].source->part) >
           std::tie(planned[b].source->message, planned[b].source->part);
  });
  for (size_t d : order) {
    std::vector<MessagePart>& parts = out.generate.messages.at(planned[d].source->message).parts;
    auto at = parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(planned[d].source->part));
    parts.insert(at, std::make_move_iterator(rendered[d].begin()), std::make_move_iterator(rendered[d].end()));
  }
}

}  // namespace

void take_chat_media(ChatRequest& out, const ChatLimits& limits, MemoryAdmission* admission) {
  PendingMedia& pending = out.pending;
  if (pending.sources.empty() && pending.videos.empty()) return;
  const Clock::time_point start = Clock::now();
  MediaIntake intake(media_limits(limits), admission, start);
  std::vector<PlannedPart> planned;
  int pdf_parts = 0;
  for (const MediaSource& s : pending.sources)
    if (std::optional<PlannedPart> p = take_source(out, s, limits, intake, pdf_parts)) planned.push_back(std::move(*p));
  decode_videos(out, pending.videos, limits, intake);
  render_pages(out, planned, intake);
  out.media += static_cast<int>(intake.pdf_pages_planned()) - pdf_parts;
  out.media_ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  // The sources are done with (the planned parts pointed into them until now).
  pending.sources.clear();
  pending.videos.clear();
}

}  // namespace qvl
