// The media intake as every front end uses it: the kind decided from the
// bytes, one size cap per kind, the video options' one check, and a PDF's
// plan counted across the request.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../pdf/pdf_writer.h"
#include "media/admission.h"
#include "media/intake.h"
#include "media/kind.h"
#include "media/video_options.h"

namespace qvl {
namespace {

using test::box_page;
using test::pdf_of_pages;

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
// A literal's bytes, NULs included.
template <size_t N>
std::vector<uint8_t> literal(const char (&s)[N]) {
  return {s, s + N - 1};
}

std::vector<uint8_t> fixture(const std::string& path) {
  std::ifstream in(std::string(QVL_FIXTURES_DIR) + "/" + path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<uint8_t> pdf_bytes(int pages) {
  return bytes_of(pdf_of_pages(std::vector<test::PdfPageSpec>(pages, box_page(320, 240))));
}

TEST(MediaKind, TheBytesDecideAndTheHintOnlyWhatTheyDoNotSay) {
  const std::vector<uint8_t> png = fixture("golden/images/odd_313x97.png");
  const std::vector<uint8_t> mp4 = fixture("video/videos/stripes_96x64_24fps.mp4");
  ASSERT_FALSE(png.empty());
  ASSERT_FALSE(mp4.empty());
  for (MediaKind hint : {MediaKind::Image, MediaKind::Video, MediaKind::Pdf}) {
    EXPECT_EQ(media_kind(png, hint), MediaKind::Image);
    EXPECT_EQ(media_kind(mp4, hint), MediaKind::Video);
    EXPECT_EQ(media_kind(pdf_bytes(1), hint), MediaKind::Pdf);
    EXPECT_EQ(media_kind(bytes_of("hello, this is text"), hint), hint);
    EXPECT_EQ(media_kind({}, hint), hint);
  }
  EXPECT_EQ(media_kind(literal("\xFF\xD8\xFF\xE0xxxx"), MediaKind::Video), MediaKind::Image);  // JPEG
  EXPECT_EQ(media_kind(literal("RIFF\x10\0\0\0WEBPVP8 "), MediaKind::Video), MediaKind::Image);
  EXPECT_EQ(media_kind(literal("RIFF\x10\0\0\0AVI LIST"), MediaKind::Image), MediaKind::Video);
  EXPECT_EQ(media_kind(literal("\x1A\x45\xDF\xA3webm"), MediaKind::Image), MediaKind::Video);
  EXPECT_EQ(media_kind(literal("\0\0\0\x1C" "ftypavif"), MediaKind::Video), MediaKind::Image);  // the image decoder names it
  // A GIF is a still in an image's place and a clip in a video's.
  EXPECT_EQ(media_kind(bytes_of("GIF89a"), MediaKind::Image), MediaKind::Image);
  EXPECT_EQ(media_kind(bytes_of("GIF89a"), MediaKind::Video), MediaKind::Video);
  EXPECT_EQ(media_kind(bytes_of("GIF89a"), MediaKind::Pdf), MediaKind::Image);
}

TEST(MediaIntake, TakeDecidesTheKindWhateverTheHint) {
  MediaIntake intake{MediaLimits{}};
  MediaHint as_image;  // a PDF sent as an image gives its pages
  MediaIntake::Medium m = intake.take(pdf_bytes(2), as_image, "image");
  EXPECT_EQ(m.kind, MediaKind::Pdf);
  ASSERT_EQ(m.images.size(), 2u);
  EXPECT_EQ(m.images[0]->width, 640);  // 320 pt at the default 144 dpi
  EXPECT_EQ(m.images[0]->height, 480);
  ASSERT_TRUE(m.pdf.has_value());
  EXPECT_EQ(m.pdf->pages.size(), 2u);

  MediaHint as_pdf;
  as_pdf.kind = MediaKind::Pdf;
  m = intake.take(fixture("golden/images/odd_313x97.png"), as_pdf, "file");
  EXPECT_EQ(m.kind, MediaKind::Image);
  ASSERT_EQ(m.images.size(), 1u);
  EXPECT_EQ(m.images[0]->width, 313);
  EXPECT_FALSE(m.video);

  MediaHint as_video;
  as_video.kind = MediaKind::Video;
  as_video.video.max_frames = 4;
  m = intake.take(fixture("video/videos/stripes_96x64_24fps.mp4"), as_video, "video");
  EXPECT_EQ(m.kind, MediaKind::Video);
  ASSERT_TRUE(m.video);
  EXPECT_EQ(m.video->frames.size(), 4u);
  EXPECT_TRUE(m.images.empty());
}

TEST(MediaIntake, AMediumThatCannotBeUsedSaysItsKind) {
  MediaIntake intake{MediaLimits{}};
  MediaHint as_pdf;
  as_pdf.kind = MediaKind::Pdf;
  try {
    intake.take(bytes_of("hello, this is text"), as_pdf, "file");
    FAIL() << "no refusal";
  } catch (const PdfRefusal& e) {
    EXPECT_EQ(e.why(), PdfRefusal::Why::Unreadable);
    EXPECT_EQ(e.kind(), MediaKind::Pdf);
    EXPECT_STREQ(e.what(), "not a PDF: the file does not start with %PDF-");
  }
  try {
    intake.take(bytes_of("hello, this is text"), MediaHint{}, "image");
    FAIL() << "no refusal";
  } catch (const MediaError& e) {
    EXPECT_EQ(e.kind(), MediaKind::Image);
  }
}

TEST(MediaCaps, OneCapPerKindInEveryFrontEnd) {
  MediaLimits limits;
  limits.image.max_encoded_bytes = 500;
  limits.video.max_encoded_bytes = 2000;
  limits.pdf.max_bytes = 3000;
  EXPECT_EQ(max_file_bytes(limits, MediaKind::Image), 500u);
  EXPECT_EQ(max_file_bytes(limits, MediaKind::Video), 2000u);
  EXPECT_EQ(max_file_bytes(limits, MediaKind::Pdf), 3000u);
  EXPECT_EQ(max_media_bytes(limits), 3000u);
  // The defaults every front end starts from: a PDF is capped at PdfLimits' 64 MiB.
  EXPECT_EQ(max_file_bytes(MediaLimits{}, MediaKind::Pdf), size_t{64} << 20);

  // A PDF is capped by the PDF cap whatever it was sent as.
  std::string big = pdf_of_pages({box_page(320, 240)});
  big += "\n%" + std::string(3100 - big.size(), 'x');
  MediaIntake intake{limits};
  for (MediaKind hint : {MediaKind::Image, MediaKind::Pdf, MediaKind::Video}) {
    MediaHint h;
    h.kind = hint;
    try {
      intake.take(bytes_of(big), h, "x");
      FAIL() << "no refusal";
    } catch (const MediaTooLarge& e) {
      EXPECT_EQ(e.kind(), MediaKind::Pdf);
      EXPECT_EQ(e.limit(), 3000u);
      EXPECT_EQ(std::string(e.what()), "the PDF is " + std::to_string(big.size()) + " bytes, over the limit of 3000 bytes");
    }
  }
  // Under the PDF cap it is taken, though over the image cap.
  const std::vector<uint8_t> small = pdf_bytes(1);
  ASSERT_GT(small.size(), 500u);
  ASSERT_LT(small.size(), 3000u);
  EXPECT_EQ(intake.take(small, MediaHint{}, "x").images.size(), 1u);
  // An image over the image cap.
  const std::vector<uint8_t> png = fixture("golden/images/text_400x128.png");
  ASSERT_GT(png.size(), 500u);
  EXPECT_THROW(intake.take(png, MediaHint{}, "x"), MediaTooLarge);
}

// The message after the key's name, and the key, of check_video_options' refusal.
std::pair<std::string, std::string> refusal(const VideoOptions& o, bool frame_list = false) {
  try {
    check_video_options(o, frame_list);
  } catch (const VideoOptionError& e) {
    return {e.key(), e.what()};
  }
  return {};
}

TEST(VideoOptions, CheckedOnceForEveryFrontEnd) {
  EXPECT_EQ(refusal({}), (std::pair<std::string, std::string>{}));
  VideoOptions o;
  o.fps = 0;
  EXPECT_EQ(refusal(o), (std::pair<std::string, std::string>{"fps", "must be in [0.01, 60], got 0"}));
  o.fps = 60;
  EXPECT_EQ(refusal(o).first, "");
  o = {};
  o.max_frames = 769;
  EXPECT_EQ(refusal(o), (std::pair<std::string, std::string>{"max_frames", "must be in [1, 768], got 769"}));
  o = {};
  o.total_pixels = 0;
  EXPECT_EQ(refusal(o), (std::pair<std::string, std::string>{"total_pixels", "must be in [1, 2^40], got 0"}));
  o = {};
  o.min_frames = 10;
  o.max_frames = 6;
  EXPECT_EQ(refusal(o), (std::pair<std::string, std::string>{"min_frames", "(10) exceeds max_frames (6)"}));
  // A list of frames is used whole: its sampling keys are refused, its pixel keys are not.
  o = {};
  o.max_pixels = 1 << 20;
  EXPECT_EQ(refusal(o, true).first, "");
  o.fps = 2;
  EXPECT_EQ(refusal(o, true).first, "fps");
  try {
    check_video_options(o, true);
  } catch (const VideoOptionError& e) {
    EXPECT_TRUE(e.frame_list_key());
  }
  // A list's own length and rate.
  EXPECT_NO_THROW(check_frame_list(768, 240));
  try {
    check_frame_list(769, 2);
    FAIL() << "no refusal";
  } catch (const VideoOptionError& e) {
    EXPECT_EQ(e.key(), "frames");
    EXPECT_STREQ(e.what(), "must be at most 768 frames, got 769");
  }
  try {
    check_frame_list(4, 241);
    FAIL() << "no refusal";
  } catch (const VideoOptionError& e) {
    EXPECT_EQ(e.key(), "fps");
    EXPECT_STREQ(e.what(), "must be in [0.01, 240], got 241");
  }
  EXPECT_THROW(check_frame_list(0, 2), VideoOptionError);
}

TEST(PdfPlan, PagesAndPixelsAreCountedAcrossTheRequest) {
  MediaLimits limits;
  limits.pdf.max_pages = 5;
  MediaIntake intake{limits};
  PdfRenderRequest all;
  MediaIntake::PlannedPdf first = intake.plan_pdf(pdf_bytes(3), all);
  ASSERT_EQ(first.pages.size(), 3u);
  EXPECT_EQ(first.pages[2].index, 2);
  EXPECT_EQ(first.pages[0].width, 640);
  EXPECT_EQ(intake.pdf_pages_planned(), 3);
  try {
    intake.plan_pdf(pdf_bytes(3), all);
    FAIL() << "no refusal";
  } catch (const PdfRefusal& e) {
    EXPECT_EQ(e.why(), PdfRefusal::Why::TooManyPages);
    EXPECT_EQ(e.pages, 6);
    EXPECT_EQ(e.earlier_pages, 3);
    EXPECT_EQ(e.limit, 5);
    EXPECT_STREQ(e.what(),
                 "the request's PDFs come to 6 pages (3 of them from earlier PDFs), over the limit of 5 per request: "
                 "choose pages");
  }
  // Choosing pages brings the next one under the cap; a refused PDF counted nothing.
  PdfRenderRequest two{"3,1", 72};
  MediaIntake::PlannedPdf second = intake.plan_pdf(pdf_bytes(3), two);
  ASSERT_EQ(second.pages.size(), 2u);
  EXPECT_EQ(second.pages[0].index, 2);  // in the order written
  EXPECT_EQ(second.pages[0].width, 320);
  EXPECT_EQ(intake.pdf_pages_planned(), 5);

  MediaIntake fresh{limits};
  try {
    fresh.plan_pdf(pdf_bytes(2), PdfRenderRequest{"5", kDefaultPdfDpi});
    FAIL() << "no refusal";
  } catch (const PdfRefusal& e) {
    EXPECT_EQ(e.why(), PdfRefusal::Why::Pages);
  }
  // Pixels across the request: two pages of 640 x 480 over a 500 000 px cap.
  MediaLimits tight;
  tight.pdf.max_total_pixels = 500'000;
  MediaIntake pixels{tight};
  pixels.plan_pdf(pdf_bytes(1), all);
  try {
    pixels.plan_pdf(pdf_bytes(1), all);
    FAIL() << "no refusal";
  } catch (const PdfRefusal& e) {
    EXPECT_EQ(e.why(), PdfRefusal::Why::TooLarge);
    EXPECT_EQ(e.pixels, 2 * 640 * 480);
    EXPECT_EQ(e.limit, 500'000);
  }
}

TEST(PdfPlan, PlannedPagesAreCheckedAgainstTheBudgetBeforeRendering) {
  // 1 MiB of media: one 640 x 480 page holds 0.9 MB as RGB, and its rendering peak 3.4 MB.
  MemoryAdmissionOptions options;
  options.memory_budget_bytes = 1 << 20;
  MemoryAdmission admission(options);
  MediaIntake intake{MediaLimits{}, &admission};
  intake.plan_pdf(pdf_bytes(1), PdfRenderRequest{});
  try {
    intake.check_planned_pages_fit();
    FAIL() << "no refusal";
  } catch (const PdfRefusal& e) {
    EXPECT_EQ(e.why(), PdfRefusal::Why::OverBudget);
    EXPECT_EQ(e.pages, 1);
    EXPECT_EQ(e.need, uint64_t{640} * 480 * kPdfRenderPeakBytesPerPixel);
    EXPECT_EQ(e.budget, uint64_t{1} << 20);
  }
  MediaIntake roomy{MediaLimits{}};  // no admission: nothing to check against
  roomy.plan_pdf(pdf_bytes(1), PdfRenderRequest{});
  EXPECT_NO_THROW(roomy.check_planned_pages_fit());
}

TEST(PdfPlan, PagesDroppedBetweenPartsAreNotCountedAgain) {
  // 8 MiB of media: a 640 x 480 page holds 0.9 MB and peaks at 3.4 MB while rendered, so
  // without next_part the pages a request held add up and the sixth one cannot fit.
  MemoryAdmissionOptions options;
  options.memory_budget_bytes = 8 << 20;
  MemoryAdmission admission(options);
  const std::vector<uint8_t> pdf = pdf_bytes(12);
  MediaIntake held{MediaLimits{}, &admission};
  MediaIntake::PlannedPdf plan = held.plan_pdf(pdf, PdfRenderRequest{});
  EXPECT_THROW(for (const PdfPagePlan& p : plan.pages) held.pdf_page(plan.doc, p, "page"), MediaRefusal);
  EXPECT_EQ(admission.reserved_bytes(), 0u);  // every page dropped
  // A batch at a time, each dropped before the next: every page fits.
  MediaIntake parts{MediaLimits{}, &admission};
  plan = parts.plan_pdf(pdf, PdfRenderRequest{});
  for (const PdfPagePlan& p : plan.pages) {
    EXPECT_EQ(parts.pdf_page(plan.doc, p, "page")->width, 640);
    EXPECT_EQ(parts.held_bytes(), uint64_t{640} * 480 * 3);
    parts.next_part();
    EXPECT_EQ(parts.held_bytes(), 0u);
  }
  EXPECT_EQ(parts.pdf_pages_planned(), 12);  // still counted against the request's page cap
}

TEST(PdfPlan, AThumbnailIsRenderedThroughTheIntakeAndNotHeld) {
  MediaIntake intake{MediaLimits{}};
  const PdfDocument doc = intake.open_pdf(pdf_bytes(2));
  const std::shared_ptr<const Image> t = intake.thumbnail(doc, 1, 36, 160, 120, "file_data");
  EXPECT_EQ(t->width, 160);
  EXPECT_EQ(t->height, 120);
  EXPECT_EQ(intake.held_bytes(), 0u);
  EXPECT_EQ(intake.pdf_pages_planned(), 0);
  EXPECT_EQ(intake.plan_pdf_page(doc, 0, 72).width, 320);
  EXPECT_THROW(intake.pdf_pages(doc, "2-1"), PdfRefusal);
}

}  // namespace
}  // namespace qvl
