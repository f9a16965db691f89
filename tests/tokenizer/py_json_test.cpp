// python_json_dumps against outputs of Python 3's
//   json.dumps(json.loads(text), ensure_ascii=False)
// pasted from `python3 -c 'import json; ...'`.
#include "tokenizer/py_json.h"

#include <gtest/gtest.h>

#include <cmath>

#include "util/error.h"

namespace qvl {
namespace {

using nlohmann::ordered_json;

struct Case {
  const char* text;
  const char* python;
};

// Where Python's ints, floats and dicts differ from a naive dump.
const Case kCases[] = {
    {R"({"b": 1, "a": [1, 2.0, 3.5e-7, 1e20, -0.0, 1e16, 1e15, 0.0001, 0.00001, 123456789012345678901234567890, -9223372036854775809, 18446744073709551615, 1E2, 0.1, 2.5e-5, 1.7976931348623157e308, 5e-324]})",
     R"({"b": 1, "a": [1, 2.0, 3.5e-07, 1e+20, -0.0, 1e+16, 1000000000000000.0, 0.0001, 1e-05, 123456789012345678901234567890, -9223372036854775809, 18446744073709551615, 100.0, 0.1, 2.5e-05, 1.7976931348623157e+308, 5e-324]})"},
    {R"({"s": "tab\there \"q\" back\\slash \/ nl\n cr\r bs\b ff\f \u0001 \u001f \u007f é 北京 😀 \u00e9 \ud83d\ude00"})",
     "{\"s\": \"tab\\there \\\"q\\\" back\\\\slash / nl\\n cr\\r bs\\b ff\\f \\u0001 \\u001f \x7f é 北京 😀 é 😀\"}"},
    {R"({"dup": 1, "x": {}, "dup": [2], "e": [], "n": null, "t": true, "f": false})",
     R"({"dup": [2], "x": {}, "e": [], "n": null, "t": true, "f": false})"},
    {"  [ {\"k\" :\"v\"} , [ [] ] ]  ", R"([{"k": "v"}, [[]]])"},
    {R"("just a string")", R"("just a string")"},
    {"3", "3"},
    {"3.0", "3.0"},
    {"-12", "-12"},
    {"100.0", "100.0"},
    {"1.5", "1.5"},
    {"123456.789", "123456.789"},
    {"1e-4", "0.0001"},
    {"1e-5", "1e-05"},
    {"9999999999999999.0", "1e+16"},
    {"1e22", "1e+22"},
};

TEST(PyJson, TextMatchesPython) {
  for (const Case& c : kCases) EXPECT_EQ(python_json_dumps_text(c.text), c.python) << c.text;
}

// The nlohmann overload agrees wherever nlohmann can hold the value (all but
// the >64-bit integers and the duplicate key of the first and third cases).
TEST(PyJson, OrderedJsonMatchesPython) {
  for (size_t i = 1; i < std::size(kCases); ++i) {
    if (i == 2) continue;
    EXPECT_EQ(python_json_dumps(ordered_json::parse(kCases[i].text)), kCases[i].python) << kCases[i].text;
  }
  ordered_json j = ordered_json::parse(R"({"z": [1, 2.0, 3.5e-7, 1e20, -0.0], "a": {"b": ""}})");
  EXPECT_EQ(python_json_dumps(j), R"({"z": [1, 2.0, 3.5e-07, 1e+20, -0.0], "a": {"b": ""}})");
  EXPECT_EQ(python_json_dumps(ordered_json::object()), "{}");
  EXPECT_EQ(python_json_dumps(ordered_json::array()), "[]");
}

TEST(PyJson, FloatRepr) {
  // python3 -c 'print([repr(x) for x in [...]])'
  EXPECT_EQ(python_float_repr(12.5), "12.5");
  EXPECT_EQ(python_float_repr(3.0), "3.0");
  EXPECT_EQ(python_float_repr(1e20), "1e+20");
  EXPECT_EQ(python_float_repr(1.5e-07), "1.5e-07");
  EXPECT_EQ(python_float_repr(1e100), "1e+100");
  EXPECT_EQ(python_float_repr(-2.5e-300), "-2.5e-300");
  EXPECT_EQ(python_float_repr(0.0), "0.0");
  EXPECT_EQ(python_float_repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(python_float_repr(123456789.125), "123456789.125");
  EXPECT_EQ(python_float_repr(0.001234), "0.001234");
  EXPECT_EQ(python_float_repr(1234567890123456.7), "1234567890123456.8");
  EXPECT_EQ(python_float_repr(12345678901234567.0), "1.2345678901234568e+16");
}

TEST(PyJson, RejectsInvalidJson) {
  EXPECT_THROW(python_json_dumps_text("{\"a\": }"), Error);
  EXPECT_THROW(python_json_dumps_text(""), Error);
  EXPECT_THROW(python_json_dumps_text("{} x"), Error);
  // Python reads 1e400 as inf and writes Infinity; nlohmann's parser refuses
  // the overflow, and so does qvl (a loud error rather than another text).
  EXPECT_THROW(python_json_dumps_text("[1e400]"), Error);
  EXPECT_EQ(python_json_dumps(ordered_json::array({INFINITY, -INFINITY, NAN})), "[Infinity, -Infinity, NaN]");
}

}  // namespace
}  // namespace qvl
