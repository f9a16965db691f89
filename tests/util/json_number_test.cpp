// util/json_number: the one way a number is read out of JSON, its range
// checked on the stored value before any cast.
#include "util/json_number.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;

TEST(JsonNumber, RangeIsCheckedBeforeAnyCast) {
  int64_t i = 0;
  double d = 0;
  EXPECT_EQ(json_integer(ojson(8.9e20), INT64_MIN, INT64_MAX, i), NumberCheck::out_of_range);
  EXPECT_EQ(json_integer(ojson(9223372036854775808.0), INT64_MIN, INT64_MAX, i), NumberCheck::out_of_range);
  EXPECT_EQ(json_integer(ojson(-9223372036854775808.0), INT64_MIN, INT64_MAX, i), NumberCheck::ok);
  EXPECT_EQ(i, INT64_MIN);
  EXPECT_EQ(json_integer(ojson(UINT64_MAX), INT64_MIN, INT64_MAX, i), NumberCheck::out_of_range);
  EXPECT_EQ(json_integer(ojson(5.0), 0, 10, i), NumberCheck::ok);
  EXPECT_EQ(i, 5);
  EXPECT_EQ(json_integer(ojson(5.5), 0, 10, i), NumberCheck::not_an_integer);
  EXPECT_EQ(json_integer(ojson(-1), 0, 10, i), NumberCheck::out_of_range);
  EXPECT_EQ(json_integer(ojson("5"), 0, 10, i), NumberCheck::not_a_number);
  EXPECT_EQ(json_integer(ojson(std::numeric_limits<double>::infinity()), 0, 10, i), NumberCheck::not_finite);
  EXPECT_EQ(json_double(ojson(std::numeric_limits<double>::quiet_NaN()), 0, 1, d), NumberCheck::not_finite);
  EXPECT_EQ(json_double(ojson(UINT64_MAX), 0, 2e19, d), NumberCheck::ok);
  EXPECT_EQ(json_double(ojson(3), 0, 2, d), NumberCheck::out_of_range);
}

}  // namespace
}  // namespace qvl
