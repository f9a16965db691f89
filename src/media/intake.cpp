#include "media/intake.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "media/admission.h"
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

FrameSampling frame_sampling(const VideoOptions& o) {
  FrameSampling s;
  if (o.fps) s.fps = *o.fps;
  if (o.min_frames) s.min_frames = static_cast<int>(*o.min_frames);
  if (o.max_frames) s.max_frames = static_cast<int>(*o.max_frames);
  s.budget = o.budget;
  return s;
}

MediaIntake::MediaIntake(const MediaLimits& limits, MemoryAdmission* admission, Clock::time_point start)
    : limits_(limits), admission_(admission), deadline_(media_deadline(admission, start)) {}

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

MediaIntake::PlannedPdf MediaIntake::plan_pdf(std::span<const uint8_t> bytes, const PdfRenderRequest& request) const {
  PdfDocument doc = PdfDocument::open(bytes, limits_.pdf);
  std::vector<PdfPagePlan> pages = plan_pages(doc, select_pages(doc, request.pages, limits_.pdf), request.dpi, limits_.pdf);
  return {std::move(doc), std::move(pages)};
}

std::vector<std::shared_ptr<const Image>> MediaIntake::pdf(std::span<const uint8_t> bytes,
                                                           const PdfRenderRequest& request, const std::string& param) {
  const PlannedPdf planned = plan_pdf(bytes, request);
  std::vector<std::shared_ptr<const Image>> pages;
  for (const PdfPagePlan& p : planned.pages) pages.push_back(pdf_page(planned.doc, p, param));
  return pages;
}

}  // namespace qvl
