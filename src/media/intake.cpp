#include "media/intake.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "media/admission.h"
#include "pdf/page_selection.h"
#include "util/error.h"

namespace qvl {
namespace {

// The processor's budget is over all sampled frames together: a per-frame
// min_pixels / max_pixels (qwen-vl-utils) scales with the frame count, so
// every frame lands inside it; total_pixels caps the whole.
void apply_pixels(const VideoOptions& o, Video& v) {
  const auto n = static_cast<int64_t>(v.frames.size());
  if (o.min_pixels) v.min_pixels = *o.min_pixels * n;
  if (o.max_pixels) v.max_pixels = *o.max_pixels * n;
  if (o.total_pixels) v.max_pixels = v.max_pixels > 0 ? std::min(v.max_pixels, *o.total_pixels) : *o.total_pixels;
}

}  // namespace

std::vector<uint8_t> read_media_bytes(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open the file: ", std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) fail("cannot read the file");
  if (static_cast<uint64_t>(size) > max_bytes) fail("the file is ", size, " bytes, over the limit of ", max_bytes, " bytes");
  if (size == 0) fail("the file is empty");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) fail("cannot read the file");
  return bytes;
}

size_t max_file_bytes(const MediaLimits& limits, MediaKind kind) {
  switch (kind) {
    case MediaKind::Video: return limits.video.max_encoded_bytes;
    case MediaKind::Pdf: return limits.pdf.max_bytes;
    default: return limits.image.max_encoded_bytes;
  }
}

size_t max_media_bytes(const MediaLimits& limits) {
  return std::max({limits.image.max_encoded_bytes, limits.video.max_encoded_bytes, limits.pdf.max_bytes});
}

MediaIntake::MediaIntake(const MediaLimits& limits, MemoryAdmission* admission, Clock::time_point start)
    : limits_(limits), admission_(admission), deadline_(media_deadline(admission, start)) {}

void MediaIntake::next_part(Clock::time_point start) {
  held_ = 0;
  deadline_ = media_deadline(admission_, start);
}

double MediaIntake::seconds_left(const std::string& param) const {
  if (deadline_ == Clock::time_point::max()) return 0;
  const double left = std::chrono::duration<double>(deadline_ - Clock::now()).count();
  if (left <= 0)
    throw MediaTimeLimit(cat("the request's images and videos took over the limit of ",
                             admission_->options().time_limit_s, " s to fetch and decode (stopped at ", param, ")"));
  return left;
}

std::shared_ptr<const Image> MediaIntake::image(std::span<const uint8_t> bytes, const std::string& param) {
  DecodeLimits decode = limits_.image;
  if (!admission_) return std::make_shared<const Image>(decode_image(bytes, decode));
  const MemoryAdmission::DecodeTurn turn = admission_->decode_turn(deadline_, param);
  decode.max_seconds = seconds_left(param);
  MediaReserver reserver(*admission_, held_, deadline_, param);
  decode.budget = &reserver;
  std::shared_ptr<const Image> image = reserver.hold(decode_image(bytes, decode));
  held_ += qvl::held_bytes(*image);
  return image;
}

std::shared_ptr<const Video> MediaIntake::video(std::span<const uint8_t> bytes, const VideoOptions& options,
                                                const std::string& param) {
  VideoLimits vl = limits_.video;
  std::optional<MemoryAdmission::DecodeTurn> turn;
  std::optional<MediaReserver> reserver;
  if (admission_) {
    turn.emplace(admission_->decode_turn(deadline_, param));
    reserver.emplace(*admission_, held_, deadline_, param);
    vl.budget = &*reserver;
  }
  if (const double left = seconds_left(param); left > 0) vl.max_seconds = left;
  // The cores shared with the decodes running now (this one among them).
  VideoDecoding how;
  how.threads = video_decoder_threads(admission_ ? admission_->decoding() : 1);
  Video v = decode_video(bytes, frame_sampling(options), vl, how);
  apply_pixels(options, v);
  std::shared_ptr<const Video> video = reserver ? reserver->hold(std::move(v)) : std::make_shared<const Video>(std::move(v));
  held_ += qvl::held_bytes(*video);
  return video;
}

std::shared_ptr<const Video> MediaIntake::frames(size_t n, const std::function<std::vector<uint8_t>(size_t)>& frame_bytes,
                                                 double fps, const VideoOptions& options, const std::string& param) {
  std::optional<MemoryAdmission::DecodeTurn> turn;
  std::optional<MediaReserver> reserver;
  if (admission_) {
    turn.emplace(admission_->decode_turn(deadline_, param));
    reserver.emplace(*admission_, held_, deadline_, param);
  }
  std::vector<Image> decoded;
  decoded.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    const std::vector<uint8_t> bytes = frame_bytes(k);
    DecodeLimits decode = limits_.image;
    if (reserver) decode.budget = &*reserver;
    decode.max_seconds = seconds_left(param);
    try {
      decoded.push_back(decode_image(bytes, decode));
    } catch (const Error& e) {
      fail("frame ", k, ": ", e.what());
    }
  }
  Video v = video_from_frames(std::move(decoded), fps);
  apply_pixels(options, v);
  std::shared_ptr<const Video> video = reserver ? reserver->hold(std::move(v)) : std::make_shared<const Video>(std::move(v));
  held_ += qvl::held_bytes(*video);
  return video;
}

std::shared_ptr<const Video> MediaIntake::frames(std::vector<Image> rgb, double fps, const VideoOptions& options,
                                                 const std::string& param) {
  Video v = video_from_frames(std::move(rgb), fps);
  apply_pixels(options, v);
  std::shared_ptr<const Video> video;
  if (admission_) {  // the frames exist already: what they hold is reserved now, or refused
    MediaReserver reserver(*admission_, held_, deadline_, param);
    reserver.reserve(qvl::held_bytes(v));
    video = reserver.hold(std::move(v));
  } else {
    video = std::make_shared<const Video>(std::move(v));
  }
  held_ += qvl::held_bytes(*video);
  return video;
}

std::shared_ptr<const Image> MediaIntake::pdf_page(const PdfDocument& doc, const PdfPagePlan& page,
                                                   const std::string& param) {
  PdfLimits render = limits_.pdf;
  render.time_budget_s = 0;  // the request's deadline is checked here, before each page
  auto rendered = [&] { return std::move(render_pages(doc, {page}, render).front().image); };
  if (!admission_) {
    seconds_left(param);
    return std::make_shared<const Image>(rendered());
  }
  const MemoryAdmission::DecodeTurn turn = admission_->decode_turn(deadline_, param);
  seconds_left(param);
  MediaReserver reserver(*admission_, held_, deadline_, param);
  reserver.reserve(static_cast<uint64_t>(page.width * page.height) * kPdfRenderPeakBytesPerPixel);
  std::shared_ptr<const Image> image = reserver.hold(rendered());
  held_ += qvl::held_bytes(*image);
  return image;
}

MediaIntake::Medium MediaIntake::take(std::span<const uint8_t> bytes, const MediaHint& hint, const std::string& param,
                                      PdfPages pages) {
  Medium m;
  m.kind = media_kind(bytes, hint.kind);
  if (const size_t cap = max_file_bytes(limits_, m.kind); bytes.size() > cap) throw MediaTooLarge(m.kind, bytes.size(), cap);
  // A decoder's own refusal says what is wrong; the kind says whose it is.
  try {
    switch (m.kind) {
      case MediaKind::Image: m.images.push_back(image(bytes, param)); break;
      case MediaKind::Video: m.video = video(bytes, hint.video, param); break;
      case MediaKind::Pdf:
        m.pdf = plan_pdf(bytes, hint.pdf);
        if (pages == PdfPages::Render) m.images = render(*m.pdf, param);
        break;
    }
  } catch (const MediaError&) {
    throw;
  } catch (const MediaTimeLimit&) {
    throw;
  } catch (const Error& e) {
    throw MediaError(m.kind, e.what());
  }
  return m;
}

PdfDocument MediaIntake::open_pdf(std::span<const uint8_t> bytes) const {
  try {
    return PdfDocument::open(bytes, limits_.pdf);  // keeps its own copy of the bytes
  } catch (const Error& e) {
    throw PdfRefusal(PdfRefusal::Why::Unreadable, e.what());
  }
}

std::vector<int> MediaIntake::pdf_pages(const PdfDocument& doc, const std::string& selection) const {
  try {
    return selection.empty() ? all_pages(doc.page_count()) : parse_page_selection(selection, doc.page_count());
  } catch (const Error& e) {
    throw PdfRefusal(PdfRefusal::Why::Pages, e.what());
  }
}

PdfPagePlan MediaIntake::plan_pdf_page(const PdfDocument& doc, int index, double dpi) const {
  try {
    return plan_pages(doc, {index}, dpi, limits_.pdf).front();
  } catch (const Error& e) {
    throw PdfRefusal(PdfRefusal::Why::TooLarge, e.what());
  }
}

void MediaIntake::count_pdf_pages(int64_t n) {
  const int64_t cap = limits_.pdf.max_pages;
  if (pdf_pages_ + n > cap) {
    std::string message;
    if (pdf_pages_ > 0)
      message = cat("the request's PDFs come to ", pdf_pages_ + n, " pages (", pdf_pages_,
                    " of them from earlier PDFs), over the limit of ", cap, " per request: choose pages");
    else
      message = cat("the PDF comes to ", n, " pages, over the limit of ", cap, " per request: choose pages (like 1-", cap, ")");
    PdfRefusal refusal(PdfRefusal::Why::TooManyPages, message);
    refusal.pages = pdf_pages_ + n;
    refusal.earlier_pages = pdf_pages_;
    refusal.limit = cap;
    throw refusal;
  }
  pdf_pages_ += n;
}

MediaIntake::PlannedPdf MediaIntake::plan_pdf(std::span<const uint8_t> bytes, const PdfRenderRequest& request) {
  PdfDocument doc = open_pdf(bytes);
  const std::vector<int> chosen = pdf_pages(doc, request.pages);
  count_pdf_pages(static_cast<int64_t>(chosen.size()));
  std::vector<PdfPagePlan> pages;
  try {
    pages = plan_pages(doc, chosen, request.dpi, limits_.pdf);
  } catch (const Error& e) {
    throw PdfRefusal(PdfRefusal::Why::TooLarge, e.what());
  }
  int64_t pixels = pdf_pixels_;
  for (const PdfPagePlan& p : pages) pixels += p.width * p.height;
  if (pixels > limits_.pdf.max_total_pixels) {
    PdfRefusal refusal(PdfRefusal::Why::TooLarge,
                       cat("the request's PDF pages come to ", pixels, " px, over the limit of ",
                           limits_.pdf.max_total_pixels, " px per request: select fewer pages or a lower dpi"));
    refusal.pixels = pixels;
    refusal.limit = limits_.pdf.max_total_pixels;
    throw refusal;
  }
  pdf_pixels_ = pixels;
  for (const PdfPagePlan& p : pages) {
    const uint64_t px = static_cast<uint64_t>(p.width * p.height);
    pdf_pages_bytes_ += px * kPdfPageBytesPerPixel;
    largest_page_px_ = std::max(largest_page_px_, px);
  }
  return {std::move(doc), std::move(pages)};
}

void MediaIntake::check_planned_pages_fit() const {
  if (!admission_ || pdf_pages_bytes_ == 0) return;
  const uint64_t need = held_ + pdf_pages_bytes_ + largest_page_px_ * (kPdfRenderPeakBytesPerPixel - kPdfPageBytesPerPixel);
  const uint64_t budget = admission_->media_budget();
  if (need <= budget) return;
  PdfRefusal refusal(PdfRefusal::Why::OverBudget,
                     cat("rendering the request's ", pdf_pages_, " PDF pages needs ", need, " bytes with its other media, "
                         "over the memory budget of ", budget, " bytes: select fewer pages or a lower dpi"));
  refusal.pages = pdf_pages_;
  refusal.need = need;
  refusal.budget = budget;
  throw refusal;
}

std::vector<std::shared_ptr<const Image>> MediaIntake::render(const PlannedPdf& pdf, const std::string& param) {
  std::vector<std::shared_ptr<const Image>> pages;
  for (const PdfPagePlan& p : pdf.pages) pages.push_back(pdf_page(pdf.doc, p, param));
  return pages;
}

std::vector<std::shared_ptr<const Image>> MediaIntake::pdf(std::span<const uint8_t> bytes,
                                                           const PdfRenderRequest& request, const std::string& param) {
  return render(plan_pdf(bytes, request), param);
}

std::shared_ptr<const Image> MediaIntake::thumbnail(const PdfDocument& doc, int index, double dpi, int64_t width,
                                                    int64_t height, const std::string& param) {
  if (!admission_) return std::make_shared<const Image>(doc.render_page(index, dpi));
  const MemoryAdmission::DecodeTurn turn = admission_->decode_turn(deadline_, param);
  MediaReserver reserver(*admission_, held_, deadline_, param);
  reserver.reserve(static_cast<uint64_t>(width * height) * kPdfRenderPeakBytesPerPixel);
  return reserver.hold(doc.render_page(index, dpi));
}

}  // namespace qvl
