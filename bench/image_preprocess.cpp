// Decode + preprocess speed for a 4032x3024 JPEG photo and a 1920x1080 PNG
// screenshot down to a ~448x448 target (max_pixels 448*448), against PIL
// doing the same work in the same run (bench/image/pil_preprocess.py with
// /usr/bin/python3), plus the error of JPEG DCT-scaled decoding against the
// full-resolution path. The inputs are generated here, deterministically.
// Usage: image_preprocess [--iters N] [--python PATH] [extra.jpg ...]
//   extra JPEGs (real photos) are used for the DCT-scaling error measurement.
// Prints one JSON object.
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "image/image.h"
#include "image/preprocess.h"

namespace {

using Bytes = std::vector<uint8_t>;
namespace fs = std::filesystem;

// Smooth gradients, overlapping soft-edged discs and sensor-like noise: a
// photo's mix of flat areas, edges and texture, so JPEG entropy decoding and
// the IDCT do realistic work.
std::vector<uint8_t> make_photo(int w, int h) {
  std::vector<uint8_t> px(size_t(w) * h * 3);
  std::mt19937 rng(42);
  std::vector<float> img(px.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float* p = &img[(size_t(y) * w + x) * 3];
      p[0] = 90 + 80 * std::sin(x * 0.0021f) * std::cos(y * 0.0017f);
      p[1] = 110 + 60 * std::cos(x * 0.0013f + y * 0.0009f);
      p[2] = 70 + 100.0f * y / h;
    }
  std::uniform_real_distribution<float> u(0, 1);
  for (int i = 0; i < 350; ++i) {
    const float cx = u(rng) * w, cy = u(rng) * h, r = 20 + u(rng) * 300;
    const float col[3] = {u(rng) * 255, u(rng) * 255, u(rng) * 255};
    const int x0 = std::max(0, int(cx - r - 2)), x1 = std::min(w, int(cx + r + 2));
    const int y0 = std::max(0, int(cy - r - 2)), y1 = std::min(h, int(cy + r + 2));
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const float d = std::sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy));
        const float a = std::clamp(r - d, 0.0f, 1.5f) / 1.5f * 0.85f;
        float* p = &img[(size_t(y) * w + x) * 3];
        for (int c = 0; c < 3; ++c) p[c] = p[c] * (1 - a) + col[c] * a;
      }
  }
  std::normal_distribution<float> noise(0, 6);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(std::clamp(img[i] + noise(rng), 0.0f, 255.0f));
  return px;
}

// White window, title bar, sidebar, coloured buttons and lines of glyph-like
// marks: the flat, sharp-edged content of a screenshot.
std::vector<uint8_t> make_screenshot(int w, int h) {
  std::vector<uint8_t> px(size_t(w) * h * 3, 255);
  auto rect = [&](int x0, int y0, int x1, int y1, uint8_t r, uint8_t g, uint8_t b) {
    for (int y = std::max(0, y0); y < std::min(h, y1); ++y)
      for (int x = std::max(0, x0); x < std::min(w, x1); ++x) {
        uint8_t* p = &px[(size_t(y) * w + x) * 3];
        p[0] = r, p[1] = g, p[2] = b;
      }
  };
  std::mt19937 rng(7);
  rect(0, 0, w, 40, 45, 45, 48);
  rect(0, 40, 260, h, 240, 242, 245);
  for (int i = 0; i < 12; ++i) rect(20, 70 + i * 44, 240, 100 + i * 44, 225, 228, 232);
  for (int i = 0; i < 6; ++i) rect(300 + i * 150, 60, 430 + i * 150, 92, 30 + i * 30, 110, 200 - i * 20);
  for (int line = 0; line < 38; ++line) {
    int x = 300;
    const int y = 120 + line * 24;
    while (x < w - 80) {
      const int word = 3 + rng() % 9;
      for (int c = 0; c < word; ++c, x += 9) {
        const int gh = 8 + rng() % 6, gw = 2 + rng() % 5;
        rect(x, y + 14 - gh, x + gw, y + 14, 30, 30, 35);
        if (rng() % 3 == 0) rect(x, y + 14 - gh, x + 6, y + 16 - gh, 30, 30, 35);
      }
      x += 8;
    }
  }
  return px;
}

Bytes encode_jpeg(const std::vector<uint8_t>& px, int w, int h, int quality) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = w, c.image_height = h, c.input_components = 3, c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(&px[size_t(c.next_scanline) * w * 3]);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  Bytes out(mem, mem + size);
  std::free(mem);
  return out;
}

Bytes encode_png(const std::vector<uint8_t>& px, int w, int h) {
  png_image im{};
  im.version = PNG_IMAGE_VERSION;
  im.width = w, im.height = h, im.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  png_image_write_to_memory(&im, nullptr, &size, 0, px.data(), 0, nullptr);
  Bytes out(size);
  if (!png_image_write_to_memory(&im, out.data(), &size, 0, px.data(), 0, nullptr)) {
    std::fprintf(stderr, "png encode failed: %s\n", im.message);
    std::exit(1);
  }
  out.resize(size);
  return out;
}

double median_ms(int iters, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

qvl::PreprocessorConfig config(int64_t max_pixels) {
  qvl::PreprocessorConfig c;  // Qwen3-VL: patch 16, merge 2, temporal 2, mean/std 0.5
  c.min_pixels = 65536;
  c.max_pixels = max_pixels;
  return c;
}

struct Timing {
  double decode_ms, preprocess_ms, total_ms;
  int target_w, target_h;
};

Timing time_qvl(const Bytes& file, const qvl::PreprocessorConfig& cfg, int iters, bool dct) {
  Timing t{};
  qvl::DecodeHint hint;
  if (dct) hint = {cfg.factor(), cfg.min_pixels, cfg.max_pixels};
  qvl::Image img;
  t.decode_ms = median_ms(iters, [&] { img = qvl::decode_image(file, {}, hint); });
  qvl::PixelValues pv;
  t.preprocess_ms = median_ms(iters, [&] { pv = qvl::preprocess(img, cfg); });
  t.total_ms = median_ms(iters, [&] { pv = qvl::decode_and_preprocess(file, cfg, {}, {}, dct); });
  t.target_w = pv.resized_width, t.target_h = pv.resized_height;
  return t;
}

// pixel_values of the DCT-scaled path against the full one, in 0..255 levels.
std::string dct_error_json(const std::string& name, const Bytes& file, int64_t max_pixels) {
  qvl::PreprocessorConfig c = config(max_pixels);
  c.min_pixels = std::min<int64_t>(c.min_pixels, max_pixels);
  const auto full = qvl::decode_and_preprocess(file, c, {}, {}, false);
  const auto fast = qvl::decode_and_preprocess(file, c, {}, {}, true);
  const auto scaled = qvl::decode_image(file, {}, {c.factor(), c.min_pixels, c.max_pixels});
  double worst = 0, sum = 0;
  size_t over2 = 0;
  for (size_t i = 0; i < full.data.size(); ++i) {
    const double d = std::fabs(double(fast.data[i]) - full.data[i]) * 127.5;
    worst = std::max(worst, d), sum += d;
    over2 += d > 2.5;
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"image\": \"%s\", \"target\": [%d, %d], \"decoded_at\": [%d, %d], \"max_level_diff\": %.0f, "
                "\"mean_level_diff\": %.3f, \"frac_values_over_2_levels\": %.5f}",
                name.c_str(), full.resized_width, full.resized_height, scaled.width, scaled.height, worst,
                sum / full.data.size(), double(over2) / full.data.size());
  return buf;
}

std::string run_pil(const std::string& python, const std::string& script, int iters, int64_t max_pixels,
                    const std::vector<std::string>& files, std::vector<double>* totals) {
  std::string cmd = python + " " + script + " " + std::to_string(iters) + " " + std::to_string(max_pixels);
  for (const auto& f : files) cmd += " " + f;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  // one JSON line per file; pull "total_ms" without a JSON dependency
  size_t pos = 0;
  while ((pos = out.find("\"total_ms\": ", pos)) != std::string::npos) {
    pos += 12;
    totals->push_back(std::atof(out.c_str() + pos));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 5;
  std::string python = "/usr/bin/python3";
  std::vector<std::string> extra;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (a == "--python" && i + 1 < argc) python = argv[++i];
    else extra.push_back(a);
  }
  const int64_t max_pixels = 448 * 448;
  const auto cfg = config(max_pixels);

  const auto photo = encode_jpeg(make_photo(4032, 3024), 4032, 3024, 90);
  const auto shot = encode_png(make_screenshot(1920, 1080), 1920, 1080);
  const fs::path dir = fs::temp_directory_path() / ("qvl_image_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string photo_path = (dir / "photo_4032x3024.jpg").string(), shot_path = (dir / "screen_1920x1080.png").string();
  std::ofstream(photo_path, std::ios::binary).write(reinterpret_cast<const char*>(photo.data()), photo.size());
  std::ofstream(shot_path, std::ios::binary).write(reinterpret_cast<const char*>(shot.data()), shot.size());

  const Timing jf = time_qvl(photo, cfg, iters, false);
  const Timing jd = time_qvl(photo, cfg, iters, true);
  const Timing pf = time_qvl(shot, cfg, iters, false);

  const fs::path script = fs::path(__FILE__).parent_path() / "image/pil_preprocess.py";
  std::vector<double> pil;
  const std::string pil_out = run_pil(python, script.string(), iters, max_pixels, {photo_path, shot_path}, &pil);
  const bool have_pil = pil.size() == 2;

  std::printf("{\n  \"iterations\": %d, \"max_pixels\": %lld, \"threads\": 1,\n", iters, (long long)max_pixels);
  auto row = [](const char* name, size_t bytes, const Timing& t) {
    std::printf("  \"%s\": {\"bytes\": %zu, \"target\": [%d, %d], \"decode_ms\": %.1f, \"preprocess_ms\": %.1f, \"total_ms\": %.1f},\n",
                name, bytes, t.target_w, t.target_h, t.decode_ms, t.preprocess_ms, t.total_ms);
  };
  row("qvl_jpeg_4032x3024_full_decode", photo.size(), jf);
  row("qvl_jpeg_4032x3024_dct_scaled", photo.size(), jd);
  row("qvl_png_1920x1080", shot.size(), pf);
  if (have_pil) {
    std::printf("  \"pil_jpeg_total_ms\": %.1f, \"pil_png_total_ms\": %.1f,\n", pil[0], pil[1]);
    std::printf("  \"speedup_jpeg_full_decode\": %.2f, \"speedup_jpeg_dct_scaled\": %.2f, \"speedup_png\": %.2f,\n",
                pil[0] / jf.total_ms, pil[0] / jd.total_ms, pil[1] / pf.total_ms);
  } else {
    std::printf("  \"pil\": \"not run (%s failed)\",\n", python.c_str());
  }
  std::printf("  \"pil_raw\": [");
  bool first = true;
  size_t start = 0;
  for (size_t nl; (nl = pil_out.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::printf("%s\n    %s", first ? "" : ",", pil_out.substr(start, nl - start).c_str());
    first = false;
  }
  std::printf("],\n  \"dct_scaling_error\": [\n    %s", dct_error_json("synthetic photo 4032x3024", photo, max_pixels).c_str());
  for (const auto& path : extra) {
    std::ifstream in(path, std::ios::binary);
    const Bytes b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto im = qvl::decode_image(b);
    // targets 1/6 and 1/12 of each side: the 1/2 and 1/4 DCT scales apply
    for (int div : {6, 12}) {
      const int64_t mp = int64_t(im.width / div) * (im.height / div);
      std::printf(",\n    %s", dct_error_json(path + " /" + std::to_string(div), b, std::max<int64_t>(mp, 1024)).c_str());
    }
  }
  std::printf("\n  ]\n}\n");
  fs::remove_all(dir);
  return 0;
}
