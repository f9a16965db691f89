// y = x · Wᵀ for activations x [m, k] in f32 and a weight matrix W [n, k] in
// one of the supported formats. The only place the model multiplies matrices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ops/thread_pool.h"

namespace qvl {

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
