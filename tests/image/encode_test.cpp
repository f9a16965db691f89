// encode_jpeg: what it writes decodes (with qvl's own decoder) to the same
// size and close to the same pixels, at every odd size and the extremes of
// quality; what cannot be a JPEG is refused with a reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <algorithm>

#include "image/encode.h"
#include "image/image.h"
#include "util/error.h"

namespace {

qvl::Image gradient(int w, int h) {
  qvl::Image im;
  im.width = w;
  im.height = h;
  im.rgb.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &im.rgb[(size_t(y) * w + x) * 3];
      // Smooth at every size (3 levels a pixel), as pages and photos are:
      // 4:2:0 chroma would blur a steeper ramp beyond what the bound allows.
      p[0] = uint8_t(std::min(255, 3 * x));
      p[1] = uint8_t(std::min(255, 3 * y));
      p[2] = 128;
    }
  return im;
}

double mean_abs_error(const qvl::Image& a, const qvl::Image& b) {
  double sum = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) sum += std::abs(int(a.rgb[i]) - int(b.rgb[i]));
  return sum / double(a.rgb.size());
}

TEST(EncodeJpeg, DecodesToTheSameSizeAndNearlyTheSamePixels) {
  for (auto [w, h] : {std::pair{1, 1}, {17, 5}, {256, 181}, {181, 256}, {1024, 3}}) {
    SCOPED_TRACE(testing::Message() << w << " x " << h);
    const qvl::Image src = gradient(w, h);
    const std::vector<uint8_t> jpeg = qvl::encode_jpeg(src);
    ASSERT_GE(jpeg.size(), 4u);
    EXPECT_EQ(jpeg[0], 0xFF);  // SOI
    EXPECT_EQ(jpeg[1], 0xD8);
    const qvl::Image back = qvl::decode_image(jpeg);
    ASSERT_EQ(back.width, w);
    ASSERT_EQ(back.height, h);
    EXPECT_LT(mean_abs_error(src, back), 4.0);
  }
}

TEST(EncodeJpeg, QualityTradesBytesForError) {
  const qvl::Image src = gradient(256, 256);
  const std::vector<uint8_t> low = qvl::encode_jpeg(src, 10), high = qvl::encode_jpeg(src, 95);
  EXPECT_LT(low.size(), high.size());
  EXPECT_LT(mean_abs_error(src, qvl::decode_image(high)), mean_abs_error(src, qvl::decode_image(low)));
}

TEST(EncodeJpeg, RefusesWhatCannotBeAJpeg) {
  qvl::Image empty;
  EXPECT_THROW(qvl::encode_jpeg(empty), qvl::Error);
  qvl::Image short_pixels = gradient(8, 8);
  short_pixels.rgb.resize(10);
  EXPECT_THROW(qvl::encode_jpeg(short_pixels), qvl::Error);
  EXPECT_THROW(qvl::encode_jpeg(gradient(70000, 1)), qvl::Error);
  EXPECT_THROW(qvl::encode_jpeg(gradient(4, 4), 0), qvl::Error);
  EXPECT_THROW(qvl::encode_jpeg(gradient(4, 4), 101), qvl::Error);
}

}  // namespace
