// Internal: storage layout of the quantized weight formats and of quantized
// activations (see matmul.h for the description and error bounds). Shared by
// quantization, the kernels and the scalar twin.
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/matmul.h"

namespace qvl::quant {

constexpr int64_t kGroup = 32;    // weights per scale, along k
constexpr int64_t kBlockRows = 16;  // rows interleaved group by group
constexpr int64_t kUnit = 4;        // bytes of one row in one interleaved unit

inline int64_t padded_cols(int64_t cols) { return (cols + kGroup - 1) / kGroup * kGroup; }
inline int64_t groups(int64_t cols) { return padded_cols(cols) / kGroup; }
inline int64_t row_blocks(int64_t rows) { return (rows + kBlockRows - 1) / kBlockRows; }
inline int64_t round64(int64_t b) { return (b + 63) / 64 * 64; }
// Code bytes of one row in one group.
inline int64_t group_bytes(bool q8) { return q8 ? kGroup : kGroup / 2; }
// Row-major code bytes per row (the quantizers' output before interleaving).
inline int64_t q8_row_bytes(int64_t cols) { return padded_cols(cols); }
inline int64_t q4_row_bytes(int64_t cols) { return padded_cols(cols) / 2; }

// Interleaved layout (WeightMatrix::from_bf16): rows in blocks of 16 (the
// last block zero-padded), and within a block group by group, so a thread
// reading a range of blocks reads one sequential stream. A row's group data
// (q8: 32 bytes, q4: 16 bytes) is cut into 4-byte units, and a block's units
// are interleaved row by row, so 64 bytes hold the same unit of all 16 rows:
//   codes  [block][group][unit][row in block][4 bytes]   (64-byte aligned)
//   scales [block][group][row in block] f16              (after the codes, 64-byte aligned)
// q8: group data byte t is element t as int8 (8 units).
// q4: group data byte t holds element t (low nibble) and t + 16 (high
//     nibble), each as code + 8 (4 units).
// Every kernel reads this layout as stored, for every m: decode streams the
// blocks once; the GEMM (prefill, vision) applies tiles of blocks held in L2
// to chunks of x rows (simd_matmul_quant.cpp), with the same integer dot
// products, so nothing is dequantized or repacked per call.
struct View {
  const uint8_t* codes;
  const uint16_t* scales;
  int64_t groups;
  bool q8;
  int64_t units() const { return group_bytes(q8) / kUnit; }
  // Bytes of one (block, group): all units of its 16 rows.
  int64_t block_group_bytes() const { return group_bytes(q8) * kBlockRows; }
  // Byte t of row r's data for group g.
  const uint8_t* byte(int64_t r, int64_t g, int64_t t) const {
    return codes + (r / kBlockRows * groups + g) * block_group_bytes() + (t / kUnit) * kBlockRows * kUnit +
           (r % kBlockRows) * kUnit + t % kUnit;
  }
  uint16_t scale(int64_t r, int64_t g) const { return scales[(r / kBlockRows * groups + g) * kBlockRows + r % kBlockRows]; }
};

inline int64_t codes_bytes(bool q8, int64_t rows, int64_t cols) {
  return row_blocks(rows) * kBlockRows * groups(cols) * group_bytes(q8);
}
inline int64_t scales_bytes(int64_t rows, int64_t cols) { return row_blocks(rows) * kBlockRows * groups(cols) * 2; }

inline View view(const WeightMatrix& w) {
  View v;
  v.q8 = w.format() == WeightFormat::Q8;
  v.groups = groups(w.cols());
  v.codes = static_cast<const uint8_t*>(w.data());
  v.scales = reinterpret_cast<const uint16_t*>(v.codes + round64(codes_bytes(v.q8, w.rows(), w.cols())));
  return v;
}

// IEEE half precision, for the scales. f16_to_f32 is exact; f16_ceil gives
// the smallest f16 >= v for finite v >= 0 (saturating to the largest finite
// f16), so a scale rounded to f16 never shrinks and codes never overflow.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else {
    float f = static_cast<float>(man) * (1.0f / 16777216.0f);  // subnormal: man · 2^-24, exact
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t f16_ceil(float v) {
  if (!(v > 0)) return 0;
  if (v >= 65504.0f) return 0x7bff;
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const int exp = static_cast<int>(bits >> 23) - 127;
  uint16_t h;
  if (exp < -14) {
    // Subnormal f16: multiples of 2^-24.
    float q = v * 16777216.0f;  // exact (power of two)
    uint32_t m = static_cast<uint32_t>(q);
    if (static_cast<float>(m) < q) ++m;
    h = static_cast<uint16_t>(m);  // m == 1024 is the smallest normal: the encoding carries over
  } else {
    const uint32_t man = bits & 0x7fffff;
    h = static_cast<uint16_t>(((exp + 15) << 10) | (man >> 13));
    if (man & 0x1fff) ++h;  // carries into the exponent when the mantissa is full
  }
  return h;
}

// Quantizes rows of a bf16 [rows, cols] matrix (row stride cols) to codes in
// row-major order (row r at codes + r * q8/q4_row_bytes, partial last group
// zero-padded) and f16 scales [rows][groups]. Per group of 32:
//   q8: d = f16_ceil(max|w| / 127), code = clamp(round(w / d), -127, 127)
//   q4: e = the first weight of largest magnitude, d = -f16_ceil(|e| / 8)
//       with e's sign flipped, code = clamp(round(w / d), -8, 7)
// where w / d is computed as w · (1 / d) and rounding is to nearest, ties to
// even. The scalar functions are the specification; the SIMD ones
// (simd_quant.h) give bit-identical bytes and scales for finite input.
void quantize_rows_q8_scalar(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* codes, uint16_t* scales);
void quantize_rows_q4_scalar(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* codes, uint16_t* scales);
// The same from f32 weights (WeightMatrix::from_f32: FP8 checkpoints
// dequantized at load); SIMD twins in simd_quant.h.
void quantize_rows_q8_scalar(const float* src, int64_t rows, int64_t cols, uint8_t* codes, uint16_t* scales);
void quantize_rows_q4_scalar(const float* src, int64_t rows, int64_t cols, uint8_t* codes, uint16_t* scales);

// Activations quantized for the integer dot products of q8/q4 weights, one
// row of x [k]: per group of 32, d = max|x| / 127 (f32), code =
// clamp(round(x · (1 / d)), -127, 127) (0 where d == 0), partial last group
// zero-padded; sum = Σ codes of the group. Every m quantizes x this way, row
// by row (each row's codes depend on that row alone).
struct XRow {
  int8_t* codes;  // [groups · 32]
  float* scales;  // [groups]
  int32_t* sums;  // [groups]
};
void quantize_x_scalar(const float* x, int64_t k, const XRow& out);

}  // namespace qvl::quant
