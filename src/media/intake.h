// One request's media, from bytes to what the engine takes: an image, a
// video (a clip, or a list of frames with their rate) or a PDF's pages. The
// one place below the front ends where media is decoded: the server, the CLI
// and the C API each get the bytes their own way (a URL, a file, a buffer)
// and hand them here, so every front end takes the same media within the
// same limits — the decoders' caps from the headers, one deadline for all of
// the request's media, and, with an admission (media/admission.h), a decode
// place and the memory budget reserved before a pixel is allocated, the
// reservation travelling with the pixels.
//
// Errors: a medium that cannot be used is a qvl::Error saying why (the
// decoder's line); a spent deadline is a MediaTimeLimit; the admission's
// refusals are its own (MediaRefusal, or the server's 413 / 429). The front
// end adds where the medium came from.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "image/image.h"
#include "pdf/pdf_document.h"
#include "pdf/pdf_pages.h"
#include "util/error.h"
#include "video/video.h"

namespace qvl {

class MemoryAdmission;

// One video's sampling and pixel choices, qwen-vl-utils' keys (which vLLM's
// mm_processor_kwargs takes too); unset: the video processor's defaults.
struct VideoOptions {
  std::optional<double> fps;
  std::optional<int64_t> min_frames, max_frames;
  std::optional<int64_t> min_pixels, max_pixels;  // per frame (qwen-vl-utils)
  std::optional<int64_t> total_pixels;             // all sampled frames together
  VideoTokenBudget budget;  // the front end's --max-video-tokens (none: the model's own limits)
};

// The ranges a front end accepts for them: frames up to the processor's own
// maximum (FrameSampling), rates a clip can be sampled at.
inline constexpr int64_t kMaxVideoFrames = 768;
inline constexpr double kMinVideoFps = 0.01, kMaxVideoFps = 60;
inline constexpr int64_t kMaxVideoPixels = int64_t{1} << 40;
// The rate a list of frames may say it was taken at (qwen-vl-utils' sample_fps).
inline constexpr double kMaxFrameListFps = 240;

// What each medium may cost (the front end's caps).
struct MediaLimits {
  DecodeLimits image;  // each image, and each frame of a frame list
  VideoLimits video;   // each clip (budget and max_seconds are the intake's)
  PdfLimits pdf;       // each PDF (time_budget_s: the intake's deadline instead)
};

// The request's media ran past its deadline.
class MediaTimeLimit : public Error {
 public:
  using Error::Error;
};

class MediaIntake {
 public:
  using Clock = std::chrono::steady_clock;

  // `admission`: none decodes without accounting (the CLI, the C API). The
  // deadline, the admission's time limit, runs from `start` (the request's
  // first medium; a server counts its fetching in it).
  explicit MediaIntake(const MediaLimits& limits, MemoryAdmission* admission = nullptr,
                       Clock::time_point start = Clock::now());

  std::shared_ptr<const Image> image(std::span<const uint8_t> bytes, const std::string& param);

  // A clip (MP4/MOV, WebM/MKV, AVI, animated GIF) sampled as `options` say.
  std::shared_ptr<const Video> video(std::span<const uint8_t> bytes, const VideoOptions& options,
                                     const std::string& param);

  // A list of `n` encoded frames taken at `fps`, every one used; frame k's
  // bytes come from `frame_bytes(k)` when it is its turn (one at a time).
  // Only the pixel keys of `options` apply (a list is not sampled).
  std::shared_ptr<const Video> frames(size_t n, const std::function<std::vector<uint8_t>(size_t)>& frame_bytes,
                                      double fps, const VideoOptions& options, const std::string& param);
  // The same from decoded RGB frames.
  std::shared_ptr<const Video> frames(std::vector<Image> rgb, double fps, const VideoOptions& options,
                                      const std::string& param);

  // One planned page of an opened PDF, rendered (its peak reserved from the
  // plan before Poppler allocates).
  std::shared_ptr<const Image> pdf_page(const PdfDocument& doc, const PdfPagePlan& page, const std::string& param);
  // A PDF opened, `request.pages` chosen (every page when empty) and sized
  // under limits.pdf: every refusal of the file comes here, nothing rendered.
  struct PlannedPdf {
    PdfDocument doc;
    std::vector<PdfPagePlan> pages;
  };
  PlannedPdf plan_pdf(std::span<const uint8_t> bytes, const PdfRenderRequest& request) const;
  // plan_pdf, then each page rendered as pdf_page.
  std::vector<std::shared_ptr<const Image>> pdf(std::span<const uint8_t> bytes, const PdfRenderRequest& request,
                                                const std::string& param);

  // Bytes of pixels this request's media hold so far.
  uint64_t held_bytes() const { return held_; }
  // When this request's media must be decoded by (Clock::time_point::max(): never).
  Clock::time_point deadline() const { return deadline_; }
  const MediaLimits& limits() const { return limits_; }
  MemoryAdmission* admission() const { return admission_; }

 private:
  // Seconds left before the deadline; throws MediaTimeLimit when none are.
  double seconds_left(const std::string& param) const;

  MediaLimits limits_;
  MemoryAdmission* admission_;
  Clock::time_point deadline_;
  uint64_t held_ = 0;
};

// A medium's file for the front ends that take paths (the CLI, the C API):
// refused over `max_bytes` from its size, before it is read. Messages say
// what is wrong without the path, which the caller names.
std::vector<uint8_t> read_media_bytes(const std::string& path, size_t max_bytes);

// The sampling `options` choose (the processor's defaults where unset).
FrameSampling frame_sampling(const VideoOptions& options);

}  // namespace qvl
