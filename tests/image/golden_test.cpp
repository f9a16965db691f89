// Every fixture image through decode and the Qwen3-VL image processor,
// compared with the reference (tests/fixtures/golden, manifest "images").
#include <gtest/gtest.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "golden_tensors.h"
#include "image/image.h"
#include "image/preprocess.h"

namespace {

const std::string kGolden = std::string(QVL_FIXTURES_DIR) + "/golden/";

nlohmann::json manifest() {
  const auto bytes = qvl_test::read_file(kGolden + "manifest.json");
  return nlohmann::json::parse(bytes.begin(), bytes.end());
}

qvl::PreprocessorConfig config_for(const nlohmann::json& entry) {
  qvl::PreprocessorConfig c;  // tiny-qwen3vl's preprocessor_config.json values
  c.patch_size = 16;
  c.temporal_patch_size = 2;
  c.merge_size = 2;
  c.min_pixels = entry.at("min_pixels").get<int64_t>();
  c.max_pixels = entry.at("max_pixels").get<int64_t>();
  return c;
}

qvl::Image image_from(const qvl_test::Tensor& t) {
  qvl::Image img;
  img.height = static_cast<int>(t.shape.at(0));
  img.width = static_cast<int>(t.shape.at(1));
  img.rgb = t.bytes;
  return img;
}

struct Diff {
  int max = 0;
  double mean = 0;
};
Diff level_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  Diff d;
  if (a.size() != b.size() || a.empty()) return {999, 999};
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int v = std::abs(int(a[i]) - int(b[i]));
    d.max = std::max(d.max, v);
    sum += v;
  }
  d.mean = sum / a.size();
  return d;
}

void expect_pixel_values(const qvl::PixelValues& pv, const std::map<std::string, qvl_test::Tensor>& g,
                         const std::string& name) {
  const auto& gp = g.at("pixel_values");
  ASSERT_EQ(pv.num_patches, gp.shape.at(0)) << name;
  ASSERT_EQ(pv.patch_dim, gp.shape.at(1)) << name;
  const auto want = gp.as<float>();
  ASSERT_EQ(pv.data.size(), want.size()) << name;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(double(pv.data[i]) - want[i]);
    if (d > worst) worst = d, at = i;
  }
  EXPECT_LE(worst, 1e-6) << name << ": pixel_values differ by " << worst << " at element " << at
                         << " (row " << at / pv.patch_dim << ")";
  const auto grid = g.at("image_grid_thw").as<int64_t>();
  EXPECT_EQ(grid, (std::vector<int64_t>{pv.grid_t, pv.grid_h, pv.grid_w})) << name;
}

// The RGBA fixture composited over white by an independent route: libpng's
// simplified API to RGBA, then the rounding of PIL's paste-with-mask that
// qwen-vl-utils uses.
std::vector<uint8_t> rgba_png_over_white(const std::string& path, int* w, int* h) {
  png_image im{};
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&im, path.c_str())) throw std::runtime_error(im.message);
  im.format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> rgba(PNG_IMAGE_SIZE(im));
  if (!png_image_finish_read(&im, nullptr, rgba.data(), 0, nullptr)) throw std::runtime_error(im.message);
  *w = im.width, *h = im.height;
  std::vector<uint8_t> rgb(size_t(im.width) * im.height * 3);
  for (size_t i = 0; i < size_t(im.width) * im.height; ++i) {
    const int a = rgba[4 * i + 3];
    for (int c = 0; c < 3; ++c) {
      const double exact = (rgba[4 * i + c] * a + 255.0 * (255 - a)) / 255.0;
      rgb[3 * i + c] = static_cast<uint8_t>(std::lround(exact));
    }
  }
  return rgb;
}

TEST(Golden, EveryFixtureImage) {
  const auto m = manifest();
  std::set<std::string> pngs_compared, jpegs_compared;  // image files that went through every comparison
  for (const auto& [name, entry] : m.at("images").items()) {
    SCOPED_TRACE(name);
    const auto g = qvl_test::read_safetensors(kGolden + entry.at("file").get<std::string>());
    const auto cfg = config_for(entry);
    const auto hw = entry.at("resized_hw").get<std::vector<int>>();

    // smart_resize and the grid: exact.
    const auto size = qvl::smart_resize(entry.at("height"), entry.at("width"), cfg.factor(), cfg.min_pixels, cfg.max_pixels);
    EXPECT_EQ(size.height, hw[0]);
    EXPECT_EQ(size.width, hw[1]);

    // PNG decode: exact against the reference's RGB.
    const qvl::Image png = qvl::load_image(kGolden + "images/" + entry.at("png").get<std::string>());
    const qvl::Image ref_rgb = image_from(g.at("rgb_png"));
    ASSERT_EQ(png.width, ref_rgb.width);
    ASSERT_EQ(png.height, ref_rgb.height);
    if (entry.at("mode") == "RGBA") {
      // Deliberate difference (fixtures README, "Alpha"): the reference drops
      // alpha, qvl composites over white like qwen-vl-utils. The expected
      // decode is computed here from the RGBA PNG itself.
      int w = 0, h = 0;
      const auto want = rgba_png_over_white(kGolden + "images/" + entry.at("png").get<std::string>(), &w, &h);
      EXPECT_EQ(png.rgb, want) << "RGBA PNG composited over white";
      EXPECT_NE(png.rgb, ref_rgb.rgb) << "the fixture has transparent pixels, so compositing must change some";
    } else {
      EXPECT_EQ(png.rgb, ref_rgb.rgb) << "PNG decode";
    }

    // The processor on the reference's own RGB: resized_rgb exact, pixel_values 1e-6.
    const qvl::Image resized = qvl::resize_bicubic(ref_rgb, hw[1], hw[0]);
    const Diff rd = level_diff(resized.rgb, g.at("resized_rgb").bytes);
    EXPECT_EQ(rd.max, 0) << "resized_rgb differs: max " << rd.max << " levels, mean " << rd.mean;
    const qvl::PixelValues pv = qvl::preprocess(ref_rgb, cfg);
    EXPECT_EQ(pv.resized_height, hw[0]);
    EXPECT_EQ(pv.resized_width, hw[1]);
    expect_pixel_values(pv, g, name);
    EXPECT_EQ(pv.num_tokens(cfg.merge_size), entry.at("num_image_tokens").get<int>());

    // JPEG: the reference decoded with libjpeg-turbo 2.1.5 (islow, fancy
    // upsampling), the library and settings qvl uses, so the decode should be
    // identical; the manifest calls JPEG informative and suggests max 8 / mean 1.
    if (entry.contains("jpeg")) {
      const qvl::Image jpg = qvl::load_image(kGolden + "images/" + entry.at("jpeg").get<std::string>());
      const Diff jd = level_diff(jpg.rgb, g.at("rgb_jpeg").bytes);
      EXPECT_LE(jd.max, 8) << "JPEG decode vs reference";
      EXPECT_LE(jd.mean, 1.0) << "JPEG decode vs reference";
      if (jd.max != 0) std::printf("[ info ] %s JPEG decode differs: max %d levels, mean %.4f\n", name.c_str(), jd.max, jd.mean);
      // Preprocessing the decoded JPEG is the same chain as for the PNG, so it
      // must equal preprocessing the reference's decoded JPEG when the decodes
      // match, and stay within what the decode difference can explain when
      // they do not (two bicubic passes, each with gain below 2 and a rounding).
      const qvl::PixelValues a = qvl::preprocess(jpg, cfg);
      const qvl::PixelValues b = qvl::preprocess(image_from(g.at("rgb_jpeg")), cfg);
      EXPECT_EQ(a.grid_h, b.grid_h);
      EXPECT_EQ(a.grid_w, b.grid_w);
      ASSERT_EQ(a.data.size(), b.data.size());
      ASSERT_FALSE(a.data.empty());
      const double std_min = *std::min_element(cfg.image_std.begin(), cfg.image_std.end());
      const double bound = jd.max == 0 ? 0.0 : (4.0 * jd.max + 3.0) / 255.0 / std_min;
      double worst = 0;
      for (size_t i = 0; i < a.data.size(); ++i) worst = std::max(worst, std::fabs(double(a.data[i]) - b.data[i]));
      EXPECT_LE(worst, bound) << "pixel_values of the decoded JPEG vs of the reference's decode";
      jpegs_compared.insert(entry.at("jpeg").get<std::string>());
    }
    pngs_compared.insert(entry.at("png").get<std::string>());
  }
  // Every image file of the fixtures went through the comparisons above: an
  // image missing from the manifest, or a stage skipped, leaves a name out.
  std::set<std::string> pngs_on_disk, jpegs_on_disk;
  for (const auto& f : std::filesystem::directory_iterator(kGolden + "images")) {
    const std::string file = f.path().filename().string(), ext = f.path().extension().string();
    if (ext == ".png") pngs_on_disk.insert(file);
    if (ext == ".jpg") jpegs_on_disk.insert(file);
  }
  EXPECT_FALSE(pngs_on_disk.empty());
  EXPECT_FALSE(jpegs_on_disk.empty());
  EXPECT_EQ(pngs_compared, pngs_on_disk);
  EXPECT_EQ(jpegs_compared, jpegs_on_disk);
}

}  // namespace
