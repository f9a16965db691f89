// Weight formats and their conversion from the checkpoint's bf16.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "ops/matmul.h"
#include "ops/ops.h"
#include "ops/quant.h"
#include "ops/simd_quant.h"
#include "util/error.h"
#include "util/huge_pages.h"

namespace qvl {
namespace {

// Converted matrices go on huge pages (util/huge_pages.h): decode streams
// every matrix once per token. In an arena when the caller has one (all sizes
// share 2 MB pages); otherwise those of 2 MB and more get their own mapping.
std::shared_ptr<void> allocate(size_t bytes, const char* what, HugePageArena* arena) {
  const std::string use = cat("a ", what, " weight matrix");
  if (arena) return arena->allocate(bytes, use.c_str());
  if (bytes >= kHugePageBytes) return allocate_huge_pages(bytes, use.c_str());
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) fail("out of memory allocating ", bytes, " bytes for ", use);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

void for_rows(int64_t rows, ThreadPool* pool, const std::function<void(int64_t, int64_t, int)>& fn) {
  if (pool)
    pool->parallel_for(rows, fn);
  else
    fn(0, rows, 0);
}

// The source weights of a conversion: bf16 (as published) or f32 (an FP8
// checkpoint dequantized at load, whose values bf16 cannot hold).
inline float widen(uint16_t w) { return bf16_to_f32(w); }
inline float widen(float w) { return w; }

// One group of weights -> int8 codes in [-127, 127] and the f16 scale
// d (see quant.h); |w - d·q| <= d/2 since d >= max|w| / 127.
template <typename Src>
uint16_t quantize_group_q8(const Src* w, int64_t count, int8_t* q) {
  float amax = 0;
  for (int64_t j = 0; j < count; ++j) amax = std::max(amax, std::fabs(widen(w[j])));
  const uint16_t h = quant::f16_ceil(amax / 127.0f);
  const float d = quant::f16_to_f32(h);
  const float inv = d > 0 ? 1.0f / d : 0.0f;
  for (int64_t j = 0; j < quant::kGroup; ++j) {
    float v = j < count ? widen(w[j]) * inv : 0.0f;
    q[j] = static_cast<int8_t>(std::max(-127.0f, std::min(127.0f, std::nearbyint(v))));
  }
  return h;
}

// One group -> 4-bit codes q in [-8, 7] with w ≈ d·q. The weight of largest
// magnitude e maps to -8 (up to the f16 rounding of d = e / -8, which only
// grows |d|), so all 16 levels are used; packed two per byte: byte j holds
// element j (low nibble) and element j + 16 (high nibble), each as q + 8.
template <typename Src>
uint16_t quantize_group_q4(const Src* w, int64_t count, uint8_t* packed) {
  float amax = 0, extreme = 0;
  for (int64_t j = 0; j < count; ++j) {
    float v = widen(w[j]);
    if (std::fabs(v) > amax) {
      amax = std::fabs(v);
      extreme = v;
    }
  }
  uint16_t h = quant::f16_ceil(amax / 8.0f);
  if (extreme > 0) h |= 0x8000;
  const float d = quant::f16_to_f32(h);
  const float inv = d != 0 ? 1.0f / d : 0.0f;
  int codes[quant::kGroup];
  for (int64_t j = 0; j < quant::kGroup; ++j) {
    float v = j < count ? widen(w[j]) * inv : 0.0f;
    codes[j] = static_cast<int>(std::max(-8.0f, std::min(7.0f, std::nearbyint(v)))) + 8;
  }
  for (int64_t j = 0; j < quant::kGroup / 2; ++j)
    packed[j] = static_cast<uint8_t>(codes[j] | (codes[j + quant::kGroup / 2] << 4));
  return h;
}

// Rows [r0, r0 + count) of row-major codes/scales (count <= kBlockRows, rows
// of one block) -> the interleaved layout of quant.h; missing rows of the block are
// zero.
void interleave_block(bool q8, int64_t groups, int64_t block, const uint8_t* codes, const uint16_t* scales,
                      int64_t count, uint8_t* dst_codes, uint16_t* dst_scales) {
  const int64_t gb = quant::group_bytes(q8);
  const int64_t row_bytes = groups * gb;
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* bg = dst_codes + (block * groups + g) * gb * quant::kBlockRows;
    uint16_t* sg = dst_scales + (block * groups + g) * quant::kBlockRows;
    for (int64_t r = 0; r < quant::kBlockRows; ++r) {
      sg[r] = r < count ? scales[r * groups + g] : 0;
      for (int64_t t = 0; t < gb; t += quant::kUnit) {
        uint8_t* dst = bg + (t / quant::kUnit * quant::kBlockRows + r) * quant::kUnit;
        if (r < count)
          std::memcpy(dst, codes + r * row_bytes + g * gb + t, quant::kUnit);
        else
          std::memset(dst, q8 ? 0 : 0x88, quant::kUnit);  // code 0
      }
    }
  }
}

}  // namespace

namespace quant {

template <typename Src>
void quantize_rows_q8_any(const Src* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  const int64_t groups = quant::groups(cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)
      scales[r * groups + g] =
          quantize_group_q8(src + r * cols + g * kGroup, std::min<int64_t>(kGroup, cols - g * kGroup),
                            reinterpret_cast<int8_t*>(quants + r * q8_row_bytes(cols) + g * kGroup));
}

template <typename Src>
void quantize_rows_q4_any(const Src* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  const int64_t groups = quant::groups(cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)
      scales[r * groups + g] = quantize_group_q4(src + r * cols + g * kGroup, std::min<int64_t>(kGroup, cols - g * kGroup),
                                                 quants + r * q4_row_bytes(cols) + g * (kGroup / 2));
}

void quantize_rows_q8_scalar(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  quantize_rows_q8_any(src, rows, cols, quants, scales);
}
void quantize_rows_q4_scalar(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  quantize_rows_q4_any(src, rows, cols, quants, scales);
}
void quantize_rows_q8_scalar(const float* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  quantize_rows_q8_any(src, rows, cols, quants, scales);
}
void quantize_rows_q4_scalar(const float* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  quantize_rows_q4_any(src, rows, cols, quants, scales);
}

void quantize_x_scalar(const float* x, int64_t k, const XRow& out) {
  for (int64_t g = 0; g < groups(k); ++g) {
    const int64_t count = std::min<int64_t>(kGroup, k - g * kGroup);
    const float* xg = x + g * kGroup;
    float amax = 0;
    for (int64_t j = 0; j < count; ++j) amax = std::max(amax, std::fabs(xg[j]));
    const float d = amax / 127.0f;
    const float inv = d > 0 ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int64_t j = 0; j < kGroup; ++j) {
      float v = j < count ? xg[j] * inv : 0.0f;
      int8_t q = static_cast<int8_t>(std::max(-127.0f, std::min(127.0f, std::nearbyint(v))));
      out.codes[g * kGroup + j] = q;
      sum += q;
    }
    out.scales[g] = d;
    out.sums[g] = sum;
  }
}

}  // namespace quant

WeightMatrix WeightMatrix::view_bf16(const uint16_t* data, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) fail("bf16 weight view with negative shape [", rows, ", ", cols, "]");
  WeightMatrix w;
  w.format_ = WeightFormat::BF16;
  w.rows_ = rows;
  w.cols_ = cols;
  w.data_ = data;
  w.bytes_ = static_cast<size_t>(rows * cols) * 2;
  return w;
}

WeightMatrix WeightMatrix::view_f32(const float* data, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) fail("f32 weight view with negative shape [", rows, ", ", cols, "]");
  WeightMatrix w;
  w.format_ = WeightFormat::F32;
  w.rows_ = rows;
  w.cols_ = cols;
  w.data_ = data;
  w.bytes_ = static_cast<size_t>(rows * cols) * 4;
  return w;
}

size_t WeightMatrix::storage_bytes(WeightFormat format, int64_t rows, int64_t cols) {
  switch (format) {
    case WeightFormat::BF16: return static_cast<size_t>(rows * cols) * 2;
    case WeightFormat::F32: return static_cast<size_t>(rows * cols) * 4;
    case WeightFormat::Q8:
    case WeightFormat::Q4: {
      const bool q8 = format == WeightFormat::Q8;
      return static_cast<size_t>(quant::round64(quant::codes_bytes(q8, rows, cols)) + quant::scales_bytes(rows, cols));
    }
  }
  return 0;
}

WeightMatrix WeightMatrix::view_quantized(const void* data, int64_t rows, int64_t cols, WeightFormat format,
                                          std::shared_ptr<const void> keep) {
  if (format != WeightFormat::Q8 && format != WeightFormat::Q4)
    fail("view_quantized: format ", weight_format_name(format), " is not q8 or q4");
  if (rows < 0 || cols < 0) fail("quantized weight view with negative shape [", rows, ", ", cols, "]");
  if (reinterpret_cast<uintptr_t>(data) % 64 != 0) fail("quantized weight view is not 64-byte aligned");
  WeightMatrix w;
  w.format_ = format;
  w.rows_ = rows;
  w.cols_ = cols;
  w.data_ = data;
  w.owned_ = std::move(keep);
  const bool q8 = format == WeightFormat::Q8;
  w.bytes_ = static_cast<size_t>(quant::codes_bytes(q8, rows, cols) + quant::scales_bytes(rows, cols));
  return w;
}

WeightMatrix WeightMatrix::from_bf16(const uint16_t* data, int64_t rows, int64_t cols, WeightFormat format,
                                     ThreadPool* pool, const std::function<void(int64_t, int64_t)>& rows_read,
                                     HugePageArena* arena) {
  if (rows < 0 || cols < 0) fail("weight matrix with negative shape [", rows, ", ", cols, "]");
  WeightMatrix w;
  w.format_ = format;
  w.rows_ = rows;
  w.cols_ = cols;
  switch (format) {
    case WeightFormat::BF16: {
      size_t bytes = static_cast<size_t>(rows * cols) * 2;
      std::shared_ptr<void> buf = allocate(bytes, "bf16", arena);
      std::memcpy(buf.get(), data, bytes);
      w.owned_ = buf;
      if (rows_read) rows_read(0, rows);
      w.bytes_ = bytes;
      break;
    }
    case WeightFormat::F32: {
      size_t bytes = static_cast<size_t>(rows * cols) * 4;
      std::shared_ptr<void> buf = allocate(bytes, "f32", arena);
      w.owned_ = buf;
      float* dst = static_cast<float*>(buf.get());
      for_rows(rows, pool, [&](int64_t b, int64_t e, int) {
        bf16_to_f32(data + b * cols, dst + b * cols, (e - b) * cols);
        if (rows_read) rows_read(b, e);
      });
      w.bytes_ = bytes;
      break;
    }
    case WeightFormat::Q8:
    case WeightFormat::Q4:
      quantize_into(w, data, pool, rows_read, arena);
      break;
  }
  w.data_ = w.owned_.get();
  return w;
}

// Quantizes [rows, cols] source weights into w (format, rows, cols set):
// row-major a block of rows at a time, then interleaved (quant.h).
template <typename Src>
void WeightMatrix::quantize_into(WeightMatrix& w, const Src* data, ThreadPool* pool,
                                 const std::function<void(int64_t, int64_t)>& rows_read, HugePageArena* arena) {
  const int64_t rows = w.rows_, cols = w.cols_;
  const bool q8 = w.format_ == WeightFormat::Q8;
  const int64_t groups = quant::groups(cols);
  const int64_t row_bytes = groups * quant::group_bytes(q8);
  const int64_t codes_bytes = quant::round64(quant::codes_bytes(q8, rows, cols));
  const int64_t scales_bytes = quant::scales_bytes(rows, cols);
  std::shared_ptr<void> buf =
      allocate(static_cast<size_t>(codes_bytes + scales_bytes), weight_format_name(w.format_), arena);
  w.owned_ = buf;
  uint8_t* base = static_cast<uint8_t*>(buf.get());
  uint16_t* scales = reinterpret_cast<uint16_t*>(base + codes_bytes);
  const int64_t blocks = quant::row_blocks(rows);
  for_rows(blocks, pool, [&](int64_t b0, int64_t b1, int) {
    std::vector<uint8_t> tmp_codes(static_cast<size_t>(quant::kBlockRows * row_bytes));
    std::vector<uint16_t> tmp_scales(static_cast<size_t>(quant::kBlockRows * groups));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * quant::kBlockRows, count = std::min(quant::kBlockRows, rows - r0);
      if (q8)
        simd::quantize_rows_q8(data + r0 * cols, count, cols, tmp_codes.data(), tmp_scales.data());
      else
        simd::quantize_rows_q4(data + r0 * cols, count, cols, tmp_codes.data(), tmp_scales.data());
      interleave_block(q8, groups, b, tmp_codes.data(), tmp_scales.data(), count, base, scales);
      if (rows_read) rows_read(r0, r0 + count);
    }
  });
  w.bytes_ = static_cast<size_t>(quant::codes_bytes(q8, rows, cols) + scales_bytes);
}

WeightMatrix WeightMatrix::from_f32(const float* data, int64_t rows, int64_t cols, WeightFormat format,
                                    ThreadPool* pool, HugePageArena* arena) {
  if (rows < 0 || cols < 0) fail("weight matrix with negative shape [", rows, ", ", cols, "]");
  WeightMatrix w;
  w.format_ = format;
  w.rows_ = rows;
  w.cols_ = cols;
  const size_t n = static_cast<size_t>(rows * cols);
  switch (format) {
    case WeightFormat::F32: {
      std::shared_ptr<void> buf = allocate(n * 4, "f32", arena);
      std::memcpy(buf.get(), data, n * 4);
      w.owned_ = buf;
      w.bytes_ = n * 4;
      break;
    }
    case WeightFormat::BF16: {
      std::shared_ptr<void> buf = allocate(n * 2, "bf16", arena);
      w.owned_ = buf;
      uint16_t* dst = static_cast<uint16_t*>(buf.get());
      for_rows(rows, pool, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b * cols; i < e * cols; ++i) dst[i] = f32_to_bf16(data[i]);
      });
      w.bytes_ = n * 2;
      break;
    }
    case WeightFormat::Q8:
    case WeightFormat::Q4:
      quantize_into(w, data, pool, {}, arena);
      break;
  }
  w.data_ = w.owned_.get();
  return w;
}

}  // namespace qvl
