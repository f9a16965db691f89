// One request's media, from bytes to what the engine takes: an image, a
// video (a clip, or a list of frames with their rate) or a PDF's pages. The
// one place below the front ends where media is decided and decoded: the
// server, the CLI and the C API each get the bytes their own way (a URL, a
// file, a buffer) and hand them to take() with a hint, which decides the
// kind from the bytes (media/kind.h), so every front end takes the same media within the
// same limits — one size cap per kind (max_file_bytes), a PDF's pages counted
// and sized across the request — the decoders' caps from the headers, one deadline for all of
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
#include "media/kind.h"
#include "media/video_options.h"
#include "util/error.h"
#include "video/video.h"

namespace qvl {

class MemoryAdmission;

// What each medium may cost (the front end's caps).
struct MediaLimits {
  DecodeLimits image;  // each image, and each frame of a frame list
  VideoLimits video;   // each clip (budget and max_seconds are the intake's)
  PdfLimits pdf;       // each PDF, and pages and pixels across the request (time_budget_s: the intake's deadline instead)
};

// The encoded file a kind may take: image.max_encoded_bytes,
// video.max_encoded_bytes or pdf.max_bytes, in every front end.
size_t max_file_bytes(const MediaLimits& limits, MediaKind kind);
// The largest of the three: what a front end may read before the bytes say
// what they are.
size_t max_media_bytes(const MediaLimits& limits);

// A medium that cannot be used, and which kind it turned out to be.
class MediaError : public Error {
 public:
  MediaError(MediaKind kind, const std::string& message) : Error(message), kind_(kind) {}
  MediaKind kind() const { return kind_; }

 private:
  MediaKind kind_;
};

// A file over max_file_bytes of its kind.
class MediaTooLarge : public MediaError {
 public:
  MediaTooLarge(MediaKind kind, size_t bytes, size_t limit)
      : MediaError(kind, cat("the ", media_kind_name(kind), " is ", bytes, " bytes, over the limit of ", limit, " bytes")),
        bytes_(bytes), limit_(limit) {}
  size_t bytes() const { return bytes_; }
  size_t limit() const { return limit_; }

 private:
  size_t bytes_, limit_;
};

// A PDF refused before anything is rendered; what() says why in the
// library's words, the numbers let a front end say it in its own.
class PdfRefusal : public MediaError {
 public:
  enum class Why {
    Unreadable,    // no PDF, truncated, corrupt or encrypted
    Pages,         // a page selection that does not fit the document
    TooManyPages,  // the request's PDFs come to more than limits.pdf.max_pages
    TooLarge,      // a page over the pixel cap even at min_dpi, or the request's pages over max_total_pixels
    OverBudget,    // the request's pages cannot fit the admission's budget beside its other media
  };
  PdfRefusal(Why why, const std::string& message) : MediaError(MediaKind::Pdf, message), why_(why) {}
  Why why() const { return why_; }
  int64_t pages = 0, earlier_pages = 0;  // TooManyPages, OverBudget: the request's pages; TooManyPages: earlier PDFs' of them
  int64_t pixels = 0;                    // TooLarge over max_total_pixels: the request's pages together
  int64_t limit = 0;                     // TooManyPages: max_pages; TooLarge over the total: max_total_pixels
  uint64_t need = 0, budget = 0;         // OverBudget: bytes

 private:
  Why why_;
};

// The request's media ran past its deadline.
class MediaTimeLimit : public Error {
 public:
  using Error::Error;
};

// What the front end says of a medium beside its bytes: where it was given
// (an image part or --image, a video part or --video, a file part or
// qvl_request_add_pdf), which decides only what the bytes do not
// (media_kind), and how a clip is sampled and a PDF's pages chosen should
// the bytes be one.
struct MediaHint {
  MediaKind kind = MediaKind::Image;
  VideoOptions video;
  PdfRenderRequest pdf;
};

class MediaIntake {
 public:
  using Clock = std::chrono::steady_clock;

  // `admission`: none decodes without accounting (the CLI, the C API). The
  // deadline, the admission's time limit, runs from `start` (the request's
  // first medium; a server counts its fetching in it).
  explicit MediaIntake(const MediaLimits& limits, MemoryAdmission* admission = nullptr,
                       Clock::time_point start = Clock::now());

  // A PDF opened, its pages chosen and sized (nothing rendered).
  struct PlannedPdf {
    PdfDocument doc;
    std::vector<PdfPagePlan> pages;
  };
  // What one medium became.
  struct Medium {
    MediaKind kind = MediaKind::Image;
    std::vector<std::shared_ptr<const Image>> images;  // the image, or the PDF's rendered pages in order
    std::shared_ptr<const Video> video;
    std::optional<PlannedPdf> pdf;  // a PDF: its document and the plan of its pages
  };
  enum class PdfPages { Render, Plan };

  // The one entry: `bytes` are decided (media_kind with hint.kind), checked
  // against their kind's max_file_bytes (MediaTooLarge) and decoded: an
  // image, a clip sampled as hint.video says, or a PDF planned as hint.pdf
  // says (plan_pdf) and, with PdfPages::Render, rendered. A medium that
  // cannot be used is a MediaError of its kind (PdfRefusal for a PDF refused
  // before rendering).
  Medium take(std::span<const uint8_t> bytes, const MediaHint& hint, const std::string& param,
              PdfPages pages = PdfPages::Render);

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

  // A PDF opened (PdfRefusal Unreadable), its pages `selection` chooses
  // (every page when empty; PdfRefusal Pages), and one page sized at `dpi`
  // under limits.pdf alone (PdfRefusal TooLarge). None counts in the
  // request's totals: for front ends that list or split a document.
  PdfDocument open_pdf(std::span<const uint8_t> bytes) const;
  std::vector<int> pdf_pages(const PdfDocument& doc, const std::string& selection) const;
  PdfPagePlan plan_pdf_page(const PdfDocument& doc, int index, double dpi) const;
  // `n` pages counted against limits.pdf.max_pages beside those the
  // request's earlier PDFs planned (PdfRefusal TooManyPages).
  void count_pdf_pages(int64_t n);

  // A PDF opened, `request.pages` chosen (every page when empty) and sized
  // under limits.pdf, its pages and pixels counted in the request's totals
  // (max_pages, max_total_pixels across its PDFs): every refusal of the file
  // comes here, nothing rendered.
  PlannedPdf plan_pdf(std::span<const uint8_t> bytes, const PdfRenderRequest& request);
  // With an admission: every page planned so far and the largest one's
  // rendering peak beside what the request holds, against the whole media
  // budget (PdfRefusal OverBudget), so a request that can never fit is
  // refused before its first page, not after half of them.
  void check_planned_pages_fit() const;
  // One planned page of an opened PDF, rendered (its peak reserved from the
  // plan before Poppler allocates).
  std::shared_ptr<const Image> pdf_page(const PdfDocument& doc, const PdfPagePlan& page, const std::string& param);
  // Every page of a planned PDF, as pdf_page.
  std::vector<std::shared_ptr<const Image>> render(const PlannedPdf& pdf, const std::string& param);
  // plan_pdf, then render.
  std::vector<std::shared_ptr<const Image>> pdf(std::span<const uint8_t> bytes, const PdfRenderRequest& request,
                                                const std::string& param);
  // A page rendered at `dpi` to `width` x `height` px for a moment (a
  // thumbnail): through the admission like a page, not counted in what the
  // request holds, since the caller drops it once encoded.
  std::shared_ptr<const Image> thumbnail(const PdfDocument& doc, int index, double dpi, int64_t width, int64_t height,
                                         const std::string& param);

  // For work that takes its media a few at a time and drops each part
  // before the next (indexing a document's pages, reranking a search's):
  // the media handed out so far are gone, so what the request holds starts
  // again from nothing, and its time limit runs again from `start`. The
  // pages and pixels planned stay counted against the limits.
  void next_part(Clock::time_point start = Clock::now());

  // Bytes of pixels this request's media hold so far.
  uint64_t held_bytes() const { return held_; }
  // PDF pages planned so far (plan_pdf, count_pdf_pages).
  int64_t pdf_pages_planned() const { return pdf_pages_; }
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
  int64_t pdf_pages_ = 0, pdf_pixels_ = 0;
  uint64_t pdf_pages_bytes_ = 0, largest_page_px_ = 0;  // of the planned pages, for check_planned_pages_fit
};

// A medium's file for the front ends that take paths (the CLI, the C API):
// refused over `max_bytes` from its size, before it is read. Messages say
// what is wrong without the path, which the caller names.
std::vector<uint8_t> read_media_bytes(const std::string& path, size_t max_bytes);

}  // namespace qvl
