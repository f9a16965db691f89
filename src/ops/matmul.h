// y = x · Wᵀ for activations x [m, k] in f32 and a weight matrix W [n, k] in
// one of the supported formats. The only place the model multiplies matrices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ops/thread_pool.h"

namespace qvl {

// Weight formats. f32 and bf16 are exact (bf16 -> f32 widening is exact, and
// products are summed in f32 without rounding activations). q8 and q4 are
// group-wise formats of our own, quantized at load by from_bf16:
//
//   Both: groups of 32 consecutive weights along k (a row's last group is
//   zero-padded when k % 32 != 0); one f32 scale d per group. Storage (one
//   64-byte aligned buffer): all codes, row-major, row stride = row_bytes,
//   then (at the next 64-byte boundary) all scales, [rows][ceil(k/32)] f32.
//   q8: code q = round(w / d) in [-127, 127], d = max|w| / 127, one int8
//       per weight (row_bytes = 32·ceil(k/32)). |w - d·q| <= d/2.
//       1.125 bytes per weight.
//   q4: d = (weight of largest magnitude) / -8, code q = clamp(round(w / d),
//       -8, 7), so the extreme weight is exact and all 16 levels are used.
//       Stored as q + 8 in a nibble; byte j of a group's 16 bytes holds
//       element j (low nibble) and element j + 16 (high nibble)
//       (row_bytes = 16·ceil(k/32)). |w - d·q| <= |d| (one step, the clamp
//       at +8 -> 7), else <= |d|/2. 0.625 bytes per weight.
//   y = Σ_groups d · Σ_j q_j·x_j, accumulated in f32 (x is not quantized).
//   Error of y against the same product with f32 weights, measured by
//   bench/ops_report (normal weights, uniform x in [-1, 1], m=8, n=2048,
//   k=2048 and 6144): relative L2 error q8 0.53-0.54 %, q4 8.5-8.7 %; worst
//   single output error / RMS of outputs: q8 2.1 %, q4 38 %.
//   Kernels (simd_matmul.cpp) agree with the scalar twin (scalar.cpp) to f32
//   rounding; tests/ops hold them together.
enum class WeightFormat { F32, BF16, Q8, Q4 };
const char* weight_format_name(WeightFormat f);           // "f32", "bf16", "q8", "q4"
WeightFormat parse_weight_format(const std::string& name);  // throws qvl::Error

// A weight matrix [rows = n, cols = k], row-major as Hugging Face stores it.
// Views borrow memory (the mmap); converted matrices own theirs.
class WeightMatrix {
 public:
  WeightMatrix() = default;
  static WeightMatrix view_bf16(const uint16_t* data, int64_t rows, int64_t cols);
  static WeightMatrix view_f32(const float* data, int64_t rows, int64_t cols);
  // Converts bf16 source weights to `format` (packing/quantizing as needed).
  static WeightMatrix from_bf16(const uint16_t* data, int64_t rows, int64_t cols, WeightFormat format,
                                ThreadPool* pool = nullptr);

  WeightFormat format() const { return format_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }  // storage read per full pass

 private:
  WeightFormat format_ = WeightFormat::F32;
  int64_t rows_ = 0, cols_ = 0;
  const void* data_ = nullptr;
  size_t bytes_ = 0;
  std::shared_ptr<void> owned_;
};

// y [m, w.rows()] (row stride ldy) = x [m, w.cols()] (row stride ldx) · Wᵀ (+ bias [w.rows()]).
void matmul(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
            int64_t ldy, ThreadPool& pool);
inline void matmul(const float* x, int64_t m, const WeightMatrix& w, const float* bias, float* y, ThreadPool& pool) {
  matmul(x, m, w.cols(), w, bias, y, w.rows(), pool);
}

}  // namespace qvl
