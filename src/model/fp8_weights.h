// Fine-grained FP8 weights (config.json quantization_config, quant_method
// "fp8": Qwen/Qwen3-VL-*-FP8) dequantized at load. A quantized linear X holds
// X.weight F8_E4M3 [rows, cols] and X.weight_scale_inv [⌈rows/128⌉,
// ⌈cols/128⌉] in BF16, F16 or F32; W[r, c] = e4m3(weight[r, c]) ·
// scale_inv[r / 128, c / 128] in f32 (exact: an E4M3 value has 4 significant
// bits and a scale at most 24, so the f32 product is the real one rounded
// once). Edge blocks are smaller when a side is not a multiple of 128. The
// layout is transformers' FineGrainedFP8 (integrations/finegrained_fp8.py,
// the dequantize path of its weight conversion).
#pragma once

#include <cstdint>
#include <string>

#include "io/model_config.h"
#include "io/safetensors.h"
#include "ops/thread_pool.h"

namespace qvl {

// The scale tensor's name beside weight `name` ("...q_proj.weight" ->
// "...q_proj.weight_scale_inv").
inline std::string fp8_scale_name(const std::string& weight_name) { return weight_name + "_scale_inv"; }

// out [rows, cols] = the dequantized weight. Throws qvl::Error naming the
// tensor and its file when the weight is not F8_E4M3 [rows, cols], the scale
// not BF16/F16/F32 of the block grid's shape or not finite and positive, or
// a weight is an E4M3 NaN code (0x7F, 0xFF: E4M3 has no infinities).
void dequantize_fp8(const TensorView& weight, const TensorView& scale, const Fp8Quantization& q, int64_t rows,
                    int64_t cols, float* out, ThreadPool* pool);

}  // namespace qvl
