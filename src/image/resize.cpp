// PIL-exact bicubic resize (Pillow src/libImaging/Resample.c, the algorithm
// transformers' slow Qwen2-VL image processor runs through Image.resize):
// per output pixel a window of normalised cubic weights (a = -0.5) whose
// support widens with the downscale factor, weights converted to fixed point,
// then a horizontal pass and a vertical pass over uint8, each rounding and
// clipping to 0..255. Written from the algorithm's description; integer sums
// are order-independent, so the loops are free to be arranged for speed.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "image/preprocess.h"
#include "image/resize_reference.h"
#include "util/error.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace qvl {
namespace {

// 8-bit results, weights that can be negative or sum past 1 before clipping:
// 32 - 8 - 2 fractional bits leave headroom in an int32 sum (Pillow's choice,
// and the rounding below depends on it).
constexpr int kPrecisionBits = 32 - 8 - 2;

double cubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// For each output index: the first input index and the fixed-point weights of
// the taps that follow it. Every row holds `taps` weights (zero-padded) so the
// inner loops have a fixed stride.
struct Kernel {
  int taps = 0;
  std::vector<int> first;    // [out_size]
  std::vector<int> count;    // [out_size]
  std::vector<int32_t> w;    // [out_size, taps]
};

// The double arithmetic below follows the reference order of operations so
// the rounded weights agree bit for bit; a fused multiply-add (which compilers
// emit by default on ARM) would round differently and move some weights by one.
// `extent` is the span of input pixels that maps onto the output: in_size,
// except for a DCT-scaled JPEG whose last decoded pixel only partly exists.
Kernel make_kernel(int in_size, double extent, int out_size) {
  constexpr double support_unit = 2.0;  // bicubic support
  const double scale = extent / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = support_unit * filter_scale;
  Kernel k;
  k.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  k.first.resize(out_size);
  k.count.resize(out_size);
  k.w.assign(static_cast<size_t>(out_size) * k.taps, 0);
  std::vector<double> tmp(k.taps);
  const double inv = 1.0 / filter_scale;
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    int lo = static_cast<int>(center - support + 0.5);
    if (lo < 0) lo = 0;
    int hi = static_cast<int>(center + support + 0.5);
    if (hi > in_size) hi = in_size;
    const int n = hi - lo;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) {
      tmp[i] = cubic((i + lo - center + 0.5) * inv);
      sum += tmp[i];
    }
    int32_t* row = &k.w[static_cast<size_t>(o) * k.taps];
    for (int i = 0; i < n; ++i) {
      double v = sum != 0.0 ? tmp[i] / sum : tmp[i];
      row[i] = static_cast<int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    k.first[o] = lo;
    k.count[o] = n;
  }
  return k;
}

inline uint8_t clip8(int32_t v) {
  v >>= kPrecisionBits;  // arithmetic shift: floor, as the reference
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

// The horizontal pass as the specification: one output pixel at a time.
void horizontal_scalar(const uint8_t* src, int sw, int row0, int rows, const Kernel& k, uint8_t* dst, int dw) {
  for (int y = 0; y < rows; ++y) {
    const uint8_t* in = src + static_cast<size_t>(row0 + y) * sw * 3;
    uint8_t* out = dst + static_cast<size_t>(y) * dw * 3;
    for (int x = 0; x < dw; ++x) {
      const int32_t* w = &k.w[static_cast<size_t>(x) * k.taps];
      const uint8_t* p = in + k.first[x] * 3;
      int32_t r = kHalf, g = kHalf, b = kHalf;
      for (int i = 0; i < k.count[x]; ++i) {
        r += p[3 * i + 0] * w[i];
        g += p[3 * i + 1] * w[i];
        b += p[3 * i + 2] * w[i];
      }
      out[3 * x + 0] = clip8(r);
      out[3 * x + 1] = clip8(g);
      out[3 * x + 2] = clip8(b);
    }
  }
}

// The same sums, arranged for SIMD without intrinsics: each 22-bit weight is
// split as w = hi * 2^11 + lo (lo in [0, 2^11), |hi| < 2^12), so both halves
// and the pixels fit int16 and each sum is an int16 x int16 -> int32 dot
// product over a zero-padded, fixed-length window, which compilers turn into
// pmaddwd / sdot. sum(p * w) = sum(p * hi) * 2^11 + sum(p * lo) exactly.
constexpr int kLoBits = 11;

struct SplitKernel {
  int len = 0;                 // taps rounded up to a multiple of 8
  std::vector<int16_t> hi, lo;  // [out_size, len]
};

SplitKernel split(const Kernel& k, int out_size) {
  SplitKernel s;
  s.len = (k.taps + 7) / 8 * 8;
  s.hi.assign(static_cast<size_t>(out_size) * s.len, 0);
  s.lo.assign(static_cast<size_t>(out_size) * s.len, 0);
  for (int o = 0; o < out_size; ++o)
    for (int i = 0; i < k.count[o]; ++i) {
      const int32_t w = k.w[static_cast<size_t>(o) * k.taps + i];
      s.hi[static_cast<size_t>(o) * s.len + i] = static_cast<int16_t>(w >> kLoBits);  // floor
      s.lo[static_cast<size_t>(o) * s.len + i] = static_cast<int16_t>(w & ((1 << kLoBits) - 1));
    }
  return s;
}

inline int32_t dot(const int16_t* a, const int16_t* b, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// RGB bytes -> three int16 planes. __restrict: uint8_t may alias anything,
// and without it every store would force the compiler to reload the row.
void deinterleave(const uint8_t* __restrict in, int n, int16_t* __restrict r, int16_t* __restrict g,
                  int16_t* __restrict b) {
  for (int x = 0; x < n; ++x) {
    r[x] = in[3 * x];
    g[x] = in[3 * x + 1];
    b[x] = in[3 * x + 2];
  }
}

void horizontal(const uint8_t* src, int sw, int row0, int rows, const Kernel& k, uint8_t* dst, int dw) {
  const SplitKernel s = split(k, dw);
  // One source row as three int16 planes, zero-padded so a window that starts
  // near the right edge can read `len` values.
  const size_t plane = static_cast<size_t>(sw) + s.len;
  std::vector<int16_t> planes(plane * 3, 0);
  int16_t* pr = planes.data();
  int16_t* pg = pr + plane;
  int16_t* pb = pg + plane;
  for (int y = 0; y < rows; ++y) {
    deinterleave(src + static_cast<size_t>(row0 + y) * sw * 3, sw, pr, pg, pb);
    uint8_t* out = dst + static_cast<size_t>(y) * dw * 3;
    for (int x = 0; x < dw; ++x) {
      const int16_t* hi = &s.hi[static_cast<size_t>(x) * s.len];
      const int16_t* lo = &s.lo[static_cast<size_t>(x) * s.len];
      const int f = k.first[x];
      out[3 * x + 0] = clip8(kHalf + dot(pr + f, hi, s.len) * (1 << kLoBits) + dot(pr + f, lo, s.len));
      out[3 * x + 1] = clip8(kHalf + dot(pg + f, hi, s.len) * (1 << kLoBits) + dot(pg + f, lo, s.len));
      out[3 * x + 2] = clip8(kHalf + dot(pb + f, hi, s.len) * (1 << kLoBits) + dot(pb + f, lo, s.len));
    }
  }
}

// Vertical pass, one output row at a time; the inner loop runs along the row
// so every tap streams one contiguous source row (cache-friendly, and the
// compiler vectorises the accumulation across pixels).
void vertical(const uint8_t* src, int row_offset, int width, const Kernel& k, uint8_t* dst, int dh) {
  const size_t n = static_cast<size_t>(width) * 3;
  std::vector<int32_t> acc(n);
  for (int y = 0; y < dh; ++y) {
    std::fill(acc.begin(), acc.end(), kHalf);
    const int32_t* w = &k.w[static_cast<size_t>(y) * k.taps];
    for (int i = 0; i < k.count[y]; ++i) {
      const uint8_t* in = src + static_cast<size_t>(k.first[y] - row_offset + i) * n;
      const int32_t wi = w[i];
      for (size_t j = 0; j < n; ++j) acc[j] += in[j] * wi;
    }
    uint8_t* out = dst + static_cast<size_t>(y) * n;
    for (size_t j = 0; j < n; ++j) out[j] = clip8(acc[j]);
  }
}

using HorizontalPass = void (*)(const uint8_t*, int, int, int, const Kernel&, uint8_t*, int);

Image resize_impl(const Image& src, int width, int height, double src_extent_w, double src_extent_h, HorizontalPass horizontal) {
  if (src.width <= 0 || src.height <= 0 || src.rgb.size() != static_cast<size_t>(src.width) * src.height * 3)
    fail("resize: source image ", src.width, "x", src.height, " has ", src.rgb.size(), " bytes, not width*height*3");
  if (width <= 0 || height <= 0) fail("resize: target size ", width, "x", height, " is not positive");
  Image out;
  out.width = width;
  out.height = height;
  // The reference's box is (0, 0, width, height) as floats; sizes below 2^24
  // are exact, so a plain double is the same number.
  const double ew = src_extent_w > 0 ? src_extent_w : src.width;
  const double eh = src_extent_h > 0 ? src_extent_h : src.height;
  const bool need_h = width != src.width || ew != src.width;
  const bool need_v = height != src.height || eh != src.height;
  if (!need_h && !need_v) {
    out.rgb = src.rgb;
    return out;
  }
  const Kernel kv = make_kernel(src.height, eh, height);
  // Only the source rows the vertical pass reads go through the horizontal pass.
  const int row0 = kv.first.front();
  const int row_end = kv.first.back() + kv.count.back();
  std::vector<uint8_t> mid;
  const uint8_t* vsrc = src.rgb.data();
  int voffset = 0;
  if (need_h) {
    const Kernel kh = make_kernel(src.width, ew, width);
    mid.resize(static_cast<size_t>(row_end - row0) * width * 3);
    horizontal(src.rgb.data(), src.width, row0, row_end - row0, kh, mid.data(), width);
    if (!need_v) {
      out.rgb = std::move(mid);
      return out;
    }
    vsrc = mid.data();
    voffset = row0;
  }
  out.rgb.resize(static_cast<size_t>(width) * height * 3);
  vertical(vsrc, voffset, width, kv, out.rgb.data(), height);
  return out;
}

}  // namespace

Image resize_bicubic(const Image& src, int width, int height, double src_extent_w, double src_extent_h) {
  return resize_impl(src, width, height, src_extent_w, src_extent_h, horizontal);
}

namespace image_detail {
Image resize_bicubic_scalar(const Image& src, int width, int height) {
  return resize_impl(src, width, height, 0, 0, horizontal_scalar);
}
}  // namespace image_detail

}  // namespace qvl
