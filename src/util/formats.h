// The number formats a user picks (weights in memory, prefill matmul
// precision, KV cache elements): declared here, beneath every layer, so the
// engine's API and its front ends name them without including the kernels
// (ops/) or the model (model/) that implement them. What each one means is
// documented where it is implemented: ops/matmul.h and model/kv_cache.h.
#pragma once

#include <string>

namespace qvl {

enum class WeightFormat { F32, BF16, Q8, Q4 };
const char* weight_format_name(WeightFormat f);           // "f32", "bf16", "q8", "q4"
WeightFormat parse_weight_format(const std::string& name);  // throws qvl::Error

enum class MatmulPrecision { Exact, Fast };
const char* matmul_precision_name(MatmulPrecision p);            // "exact", "fast"
MatmulPrecision parse_matmul_precision(const std::string& name);  // throws qvl::Error

enum class KvType { F32, F16 };
const char* kv_type_name(KvType t);             // "f32", "f16"
KvType parse_kv_type(const std::string& name);  // throws qvl::Error

}  // namespace qvl
