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

}  // namespace
}  // namespace qvl
