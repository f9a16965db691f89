// Internal: storage layout of the quantized weight formats (see matmul.h for
// the description and error bounds). Shared by quantization and kernels.
#pragma once

#include <cstdint>

#include "ops/matmul.h"

namespace qvl::quant {

constexpr int64_t kGroup = 32;  // weights per scale, along k

inline int64_t padded_cols(int64_t cols) { return (cols + kGroup - 1) / kGroup * kGroup; }
inline int64_t groups(int64_t cols) { return padded_cols(cols) / kGroup; }

// Offsets inside the owned buffer, 64-byte aligned so rows of aligned
// matrices stay aligned.
inline int64_t round64(int64_t b) { return (b + 63) / 64 * 64; }
inline int64_t q8_row_bytes(int64_t cols) { return padded_cols(cols); }
inline int64_t q4_row_bytes(int64_t cols) { return padded_cols(cols) / 2; }

struct View {
  const uint8_t* quants;  // row r at quants + r * row_bytes
  const float* scales;    // row r at scales + r * groups
  int64_t row_bytes;
  int64_t groups;
};

// Layout of a Q8 or Q4 matrix made by WeightMatrix::from_bf16.
inline View view(const WeightMatrix& w) {
  const bool q8 = w.format() == WeightFormat::Q8;
  View v;
  v.row_bytes = q8 ? q8_row_bytes(w.cols()) : q4_row_bytes(w.cols());
  v.groups = groups(w.cols());
  v.quants = static_cast<const uint8_t*>(w.data());
  v.scales = reinterpret_cast<const float*>(v.quants + round64(w.rows() * v.row_bytes));
  return v;
}

}  // namespace qvl::quant

namespace qvl::quant {

// Quantizes rows of a bf16 [rows, cols] matrix (row stride cols) into the
// Q8/Q4 layout above: row r's codes at quants + r * row_bytes, its scales at
// scales + r * groups. Rounding is to nearest, ties to even (nearbyint in the
// default mode). The scalar functions are the specification; the SIMD ones
// (simd_quant.h) must give bit-identical bytes and scales for finite input.
void quantize_rows_q8_scalar(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, float* scales);
void quantize_rows_q4_scalar(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, float* scales);

}  // namespace qvl::quant
