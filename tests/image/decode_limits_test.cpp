// The decoders' admission and work limits: each asks DecodeLimits::budget
// for its peak memory, from the header, before allocating pixels; JPEG stops
// a file with too many progressive scans or one that runs out of time.
#include <gtest/gtest.h>

#include <chrono>

#include "encoders.h"
#include "image/image.h"
#include "image_bombs.h"
#include "util/error.h"

namespace {

using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;
using qvl::decode_image;

// Records what was asked for; refuses above `cap` (as the server's admission does, by throwing).
struct RecordingBudget final : qvl::DecodeBudget {
  uint64_t cap = UINT64_MAX;
  std::vector<uint64_t> asked;
  void reserve(uint64_t bytes) override {
    asked.push_back(bytes);
    if (bytes > cap) throw std::runtime_error("over budget");
  }
};

struct Refused {
  std::string message;
  double seconds;
};

Refused refuse(const Bytes& b, const qvl::DecodeLimits& limits) {
  const auto t = Clock::now();
  try {
    decode_image(b, limits);
  } catch (const std::exception& e) {
    return {e.what(), std::chrono::duration<double>(Clock::now() - t).count()};
  }
  return {"(no error)", std::chrono::duration<double>(Clock::now() - t).count()};
}

TEST(DecodeBudget, JpegBombIsReservedFromTheHeaderBeforeAnyPixel) {
  const Bytes bomb = qvl_test::jpeg_dimension_bomb(10000, 10000);
  EXPECT_LT(bomb.size(), 1024u);
  RecordingBudget budget;
  budget.cap = 64u << 20;
  qvl::DecodeLimits limits;
  limits.budget = &budget;
  const Refused r = refuse(bomb, limits);
  EXPECT_EQ(r.message, "over budget");
  ASSERT_EQ(budget.asked.size(), 1u);
  EXPECT_GE(budget.asked[0], uint64_t{10000} * 10000 * 3);  // the RGB rows at least
  EXPECT_LT(r.seconds, 0.5);  // refused before the 300 MB were filled
}

TEST(DecodeBudget, EveryFormatAsksForAtLeastItsPixels) {
  std::vector<uint8_t> rgb(40 * 30 * 3, 100);
  qvl_test::PngSpec spec;
  spec.width = 40, spec.height = 30;
  std::vector<std::vector<uint8_t>> rows(30, std::vector<uint8_t>(40 * 3, 100));
  for (const Bytes& image : {qvl_test::encode_png(spec, rows), qvl_test::encode_jpeg(rgb, 40, 30, JCS_RGB, 3),
                             qvl_test::encode_jpeg(rgb, 40, 30, JCS_RGB, 3, 90, true)}) {
    RecordingBudget budget;
    qvl::DecodeLimits limits;
    limits.budget = &budget;
    const qvl::Image img = decode_image(image, limits);
    ASSERT_EQ(budget.asked.size(), 1u);
    EXPECT_GE(budget.asked[0], img.rgb.size());
  }
  // A progressive JPEG also counts libjpeg's coefficient buffer (128 bytes per 8x8 block).
  RecordingBudget progressive, baseline;
  qvl::DecodeLimits lp, lb;
  lp.budget = &progressive, lb.budget = &baseline;
  decode_image(qvl_test::encode_jpeg(rgb, 40, 30, JCS_RGB, 3, 90, true), lp);
  decode_image(qvl_test::encode_jpeg(rgb, 40, 30, JCS_RGB, 3, 90, false), lb);
  EXPECT_GE(progressive.asked[0], baseline.asked[0] + 5 * 4 * 128);
}

TEST(DecodeJpegLimits, HundredsOfScansAreRefusedAtTheLimit) {
  const Bytes bomb = qvl_test::jpeg_scan_bomb(1024, 1024, 700);
  EXPECT_LT(bomb.size(), 64u << 10);
  const Refused r = refuse(bomb, {});
  EXPECT_NE(r.message.find("more than 64 progressive scans"), std::string::npos) << r.message;
  EXPECT_LT(r.seconds, 1.0);
  qvl::DecodeLimits few;
  few.max_jpeg_scans = 8;
  EXPECT_NE(refuse(bomb, few).message.find("more than 8 progressive scans"), std::string::npos);
  // An ordinary progressive file (10 scans) is well inside the default.
  std::vector<uint8_t> rgb(64 * 64 * 3, 50);
  EXPECT_NO_THROW(decode_image(qvl_test::encode_jpeg(rgb, 64, 64, JCS_RGB, 3, 90, true), {}));
}

TEST(DecodeJpegLimits, DecodeTimeIsBounded) {
  const Bytes bomb = qvl_test::jpeg_scan_bomb(4096, 4096, 5000);
  qvl::DecodeLimits limits;
  limits.max_jpeg_scans = 1 << 20;  // only the clock stops it
  limits.max_seconds = 0.2;
  const Refused r = refuse(bomb, limits);
  EXPECT_NE(r.message.find("took over the limit of 0.2 s"), std::string::npos) << r.message;
  EXPECT_LT(r.seconds, 1.5);
}

TEST(DecodePngLimits, DecodeTimeIsCheckedPerRow) {
  qvl_test::PngSpec spec;
  spec.width = 2000, spec.height = 2000, spec.interlace = true;
  std::vector<std::vector<uint8_t>> rows(2000, std::vector<uint8_t>(2000 * 3, 7));
  const Bytes png = qvl_test::encode_png(spec, rows);
  qvl::DecodeLimits limits;
  limits.max_seconds = 1e-6;
  const Refused r = refuse(png, limits);
  EXPECT_NE(r.message.find("PNG refused: decoding took over the limit"), std::string::npos) << r.message;
}

}  // namespace
