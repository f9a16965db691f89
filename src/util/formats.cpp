#include "util/formats.h"

#include "util/error.h"

namespace qvl {

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::F32: return "f32";
    case WeightFormat::BF16: return "bf16";
    case WeightFormat::Q8: return "q8";
    case WeightFormat::Q4: return "q4";
  }
  return "?";
}

WeightFormat parse_weight_format(const std::string& name) {
  if (name == "f32") return WeightFormat::F32;
  if (name == "bf16") return WeightFormat::BF16;
  if (name == "q8") return WeightFormat::Q8;
  if (name == "q4") return WeightFormat::Q4;
  fail("unknown weight format '", name, "' (expected f32, bf16, q8 or q4)");
}

const char* matmul_precision_name(MatmulPrecision p) { return p == MatmulPrecision::Fast ? "fast" : "exact"; }

MatmulPrecision parse_matmul_precision(const std::string& name) {
  if (name == "exact") return MatmulPrecision::Exact;
  if (name == "fast") return MatmulPrecision::Fast;
  fail("unknown matmul precision '", name, "' (expected exact or fast)");
}

const char* kv_type_name(KvType t) { return t == KvType::F16 ? "f16" : "f32"; }

KvType parse_kv_type(const std::string& name) {
  if (name == "f32") return KvType::F32;
  if (name == "f16") return KvType::F16;
  fail("unknown KV cache type '", name, "' (f32 or f16)");
}

}  // namespace qvl
