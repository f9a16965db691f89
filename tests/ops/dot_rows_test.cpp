// dot_rows (exact vector search) against its scalar twin on every SIMD target,
// over dimensions around the vector widths, misaligned rows, and the 2B
// model's 2048.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/dot_rows.h"
#include "test_util.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_floats;

TEST(DotRows, MatchesTheScalarTwinOnEveryTarget) {
  const std::vector<int64_t> dims = {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 65, 100, 2048};
  testing::for_each_target([&](const std::string& target) {
    uint32_t seed = 7;
    for (int64_t dim : dims)
      for (int off : {0, 1, 3}) {
        const int64_t n = 5;
        Misaligned<float> rows(random_floats(n * dim, ++seed), off);
        Misaligned<float> q(random_floats(dim, ++seed), off);
        std::vector<float> out(n), twin(n);
        dot_rows(rows.data(), n, dim, q.data(), out.data());
        scalar::dot_rows(rows.data(), n, dim, q.data(), twin.data());
        for (int64_t r = 0; r < n; ++r) {
          // Different summation orders: each differs from the exact sum by at
          // most dim · ε · Σ|x·q|.
          double bound = 0, exact = 0;
          for (int64_t i = 0; i < dim; ++i) {
            bound += std::abs(double(rows.data()[r * dim + i]) * q.data()[i]);
            exact += double(rows.data()[r * dim + i]) * q.data()[i];
          }
          bound *= 2.0 * dim * 1.2e-7;
          EXPECT_NEAR(out[r], twin[r], bound) << target << " dim " << dim << " offset " << off << " row " << r;
          EXPECT_NEAR(out[r], exact, bound) << target << " dim " << dim << " offset " << off << " row " << r;
        }
      }
  });
}

TEST(DotRows, ExactOnSmallIntegers) {
  // Integer products sum exactly in any order: the kernel's value is the twin's, bit for bit.
  const int64_t dim = 37, n = 3;
  std::vector<float> rows(n * dim), q(dim);
  for (int64_t i = 0; i < n * dim; ++i) rows[i] = static_cast<float>(i % 7) - 3;
  for (int64_t i = 0; i < dim; ++i) q[i] = static_cast<float>(i % 5) - 2;
  std::vector<float> out(n), twin(n);
  testing::for_each_target([&](const std::string& target) {
    dot_rows(rows.data(), n, dim, q.data(), out.data());
    scalar::dot_rows(rows.data(), n, dim, q.data(), twin.data());
    EXPECT_EQ(out, twin) << target;
  });
  EXPECT_EQ(twin[0], 8.0f);  // Σ ((i % 7) - 3)((i % 5) - 2), i < 37
}

}  // namespace
}  // namespace qvl
