// KvCache::copy_prefix: another sequence's first n positions, every layer's
// K and V, and nothing past them; mismatched shapes and sizes are refused.
#include "model/kv_cache.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace qvl {
namespace {

void fill(KvCache& c, int64_t n, float base) {
  for (int l = 0; l < c.layers(); ++l)
    for (int64_t i = 0; i < n * c.kv_dim(); ++i) {
      c.k(l)[i] = base + l * 1000 + static_cast<float>(i);
      c.v(l)[i] = -(base + l * 1000 + static_cast<float>(i));
    }
  c.set_size(n);
}

TEST(KvCache, CopyPrefixTakesTheFirstPositionsOfEveryLayer) {
  KvCache src(3, 16, 8), dst(3, 32, 8);
  fill(src, 10, 1);
  fill(dst, 20, 5000);
  dst.copy_prefix(src, 6);
  EXPECT_EQ(dst.size(), 6);
  for (int l = 0; l < 3; ++l)
    for (int64_t i = 0; i < 6 * 8; ++i) {
      ASSERT_EQ(dst.k(l)[i], src.k(l)[i]) << "layer " << l << " element " << i;
      ASSERT_EQ(dst.v(l)[i], src.v(l)[i]) << "layer " << l << " element " << i;
    }
  // Past the prefix the old contents stay (they are beyond size(), unused).
  EXPECT_EQ(dst.k(0)[6 * 8], 5000 + 6 * 8);
  dst.copy_prefix(dst, 2);  // from itself: a truncation
  EXPECT_EQ(dst.size(), 2);
}

TEST(KvCache, CopyPrefixRefusesOtherShapesAndMissingRows) {
  KvCache src(2, 16, 8), wide(2, 16, 16), deep(3, 16, 8), small(2, 4, 8);
  fill(src, 10, 1);
  EXPECT_THROW(wide.copy_prefix(src, 2), Error);
  EXPECT_THROW(deep.copy_prefix(src, 2), Error);
  EXPECT_THROW(small.copy_prefix(src, 5), Error);  // over its capacity
  KvCache dst(2, 16, 8);
  EXPECT_THROW(dst.copy_prefix(src, 11), Error);   // the source holds 10
}

TEST(KvCache, F16CacheHalvesTheBytesAndCopiesItsOwnType) {
  KvCache f32(2, 16, 8), f16(2, 16, 8, KvType::F16), f16b(2, 16, 8, KvType::F16);
  EXPECT_EQ(f16.bytes_per_position() * 2, f32.bytes_per_position());
  EXPECT_EQ(f16.reserved_bytes() * 2, f32.reserved_bytes());
  for (int l = 0; l < 2; ++l)
    for (int64_t i = 0; i < 16 * 8; ++i) {
      f16.k16(l)[i] = static_cast<uint16_t>(l * 1000 + i);
      f16.v16(l)[i] = static_cast<uint16_t>(30000 + l * 1000 + i);
    }
  f16.set_size(16);
  f16b.copy_prefix(f16, 5);
  for (int l = 0; l < 2; ++l)
    for (int64_t i = 0; i < 5 * 8; ++i) {
      ASSERT_EQ(f16b.k16(l)[i], f16.k16(l)[i]);
      ASSERT_EQ(f16b.v16(l)[i], f16.v16(l)[i]);
    }
  fill(f32, 4, 1);
  EXPECT_THROW(f16b.copy_prefix(f32, 2), Error);  // other element type
  EXPECT_EQ(parse_kv_type("f16"), KvType::F16);
  EXPECT_EQ(parse_kv_type("f32"), KvType::F32);
  EXPECT_THROW(parse_kv_type("q8"), Error);
}

}  // namespace
}  // namespace qvl
