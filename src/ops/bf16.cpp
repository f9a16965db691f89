// bf16 <-> f32 and the embedding lookup.
#include <cstring>

#include "ops/ops.h"
#include "ops/scalar.h"

namespace qvl {

float bf16_to_f32(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1);  // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

void embed_bf16(const uint16_t* table, int64_t dim, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) bf16_to_f32(table + static_cast<int64_t>(ids[i]) * dim, out + i * dim, dim);
}

}  // namespace qvl
