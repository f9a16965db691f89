#include "model/fp8_weights.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/ops.h"
#include "util/error.h"

namespace qvl {
namespace {

std::string where(const TensorView& t) { return cat("tensor ", t.name, " in ", t.file ? *t.file : "checkpoint"); }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += cat(i ? ", " : "", s[i]);
  return out + "]";
}

// The scales as f32, whatever their stored dtype (memcpy: the mapping may be
// unaligned).
std::vector<float> read_scales(const TensorView& s) {
  std::vector<float> out(static_cast<size_t>(s.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (s.dtype == DType::F32) {
      std::memcpy(&out[i], s.data + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, s.data + 2 * i, 2);
      out[i] = s.dtype == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
    if (!std::isfinite(out[i]) || out[i] <= 0)
      fail(where(s), ": scale ", i, " is ", out[i], "; an FP8 block scale must be finite and positive");
  }
  return out;
}

}  // namespace

void dequantize_fp8(const TensorView& weight, const TensorView& scale, const Fp8Quantization& q, int64_t rows,
                    int64_t cols, float* out, ThreadPool* pool) {
  if (weight.dtype != DType::F8_E4M3)
    fail(where(weight), " has dtype ", dtype_name(weight.dtype), " beside its scale ", scale.name,
         "; an FP8 weight must be F8_E4M3");
  if (weight.numel() != rows * cols)
    fail(where(weight), " has shape ", shape_str(weight.shape), ", expected [", rows, ", ", cols, "]");
  if (scale.dtype != DType::BF16 && scale.dtype != DType::F16 && scale.dtype != DType::F32)
    fail(where(scale), " has dtype ", dtype_name(scale.dtype), "; FP8 block scales must be BF16, F16 or F32");
  const int64_t br = q.weight_block_size[0], bc = q.weight_block_size[1];
  const int64_t srows = (rows + br - 1) / br, scols = (cols + bc - 1) / bc;
  if (scale.shape != std::vector<int64_t>{srows, scols})
    fail(where(scale), " has shape ", shape_str(scale.shape), "; the ", br, "×", bc, " blocks of ", weight.name, " [",
         rows, ", ", cols, "] need [", srows, ", ", scols, "]");
  const std::vector<float> s = read_scales(scale);
  std::atomic<int64_t> nan_at{-1};
  auto rows_fn = [&](int64_t b, int64_t e, int) {
    for (int64_t r = b; r < e; ++r) {
      const uint8_t* src = weight.data + r * cols;
      const float* srow = s.data() + (r / br) * scols;
      float* dst = out + r * cols;
      for (int64_t cb = 0; cb < scols; ++cb) {
        const int64_t c0 = cb * bc, n = std::min(cols, c0 + bc) - c0;
        if (const int64_t at = e4m3_to_f32_scaled(src + c0, n, srow[cb], dst + c0); at >= 0) {
          int64_t none = -1;
          nan_at.compare_exchange_strong(none, r * cols + c0 + at);
        }
      }
    }
  };
  if (pool)
    pool->parallel_for(rows, rows_fn);
  else
    rows_fn(0, rows, 0);
  if (const int64_t at = nan_at.load(); at >= 0)
    fail(where(weight), ": element [", at / cols, ", ", at % cols, "] is the E4M3 NaN code 0x",
         (weight.data[at] == 0xff ? "FF" : "7F"), " (E4M3 has no infinities; a NaN weight is a corrupt checkpoint)");
}

}  // namespace qvl
