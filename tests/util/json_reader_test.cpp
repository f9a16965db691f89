// util/json_reader: the linear DOM builder every JSON parse of a request or a
// model file goes through.
#include "util/json_reader.h"

#include <gtest/gtest.h>

#include <ctime>

#include "util/error.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;

// CPU seconds of this process: the parse's own work, not how busy the machine is.
double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// {"x":[{},{},...]} of about `bytes` bytes: what nlohmann's parser callback took
// quadratic time over (each object end rescanned its parent).
std::string object_list(size_t bytes) {
  std::string s = "{\"x\":[";
  while (s.size() + 4 < bytes) s += "{},";
  return s + "{}]}";
}
size_t objects_in(const std::string& list) { return (list.size() - 6) / 3; }

template <class Json>
Json read_ok(std::string_view text, const JsonReadLimits& limits = {}) {
  Json out;
  JsonReadError e;
  EXPECT_TRUE(read_json(text, limits, out, e)) << e.describe();
  return out;
}

JsonReadError read_fails(std::string_view text, const JsonReadLimits& limits = {}) {
  ojson out;
  JsonReadError e;
  EXPECT_FALSE(read_json(text, limits, out, e)) << text.substr(0, 80);
  return e;
}

TEST(JsonReader, BuildsWhatNlohmannBuilds) {
  const char* text = R"({"z":1,"a":[true,null,-3,18446744073709551615,2.5,"s\u0000t",{}],"m":{"k":[]}})";
  EXPECT_EQ(read_ok<ojson>(text), ojson::parse(text));
  EXPECT_EQ(read_ok<nlohmann::json>(text), nlohmann::json::parse(text));
  EXPECT_EQ(read_ok<ojson>(text).begin().key(), "z");  // the text's key order
  EXPECT_EQ(read_ok<ojson>("7"), ojson(7));
}

TEST(JsonReader, RepeatedKeysLastWinsOrRefused) {
  std::string many = "{";  // past the hash index threshold, the repeat at the end
  for (int i = 0; i < 40; ++i) many += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  many += "\"k3\":99}";
  EXPECT_EQ(read_ok<ojson>(many)["k3"], 99);
  EXPECT_EQ(read_ok<ojson>(many).size(), 40u);
  EXPECT_EQ(read_ok<ojson>(R"({"a":1,"a":2})")["a"], 2);
  EXPECT_EQ(read_ok<nlohmann::json>(R"({"a":1,"a":2})")["a"], 2);
  JsonReadLimits refuse;
  refuse.refuse_duplicate_keys = true;
  const JsonReadError e = read_fails(R"({"t":{"a":1,"a":2}})", refuse);
  EXPECT_EQ(e.kind, JsonReadError::Kind::duplicate_key);
  EXPECT_EQ(e.detail, "a");
  EXPECT_EQ(e.path, "t");  // the object holding the repeated key
}

TEST(JsonReader, LinearTimeOnObjectListsAndWideObjects) {
  const std::string list = object_list(1'000'000);
  double t0 = cpu_seconds();
  EXPECT_EQ(read_ok<ojson>(list)["x"].size(), objects_in(list));
  EXPECT_LT(cpu_seconds() - t0, 0.5);
  // One object of 100k keys: ordered_map's own insert searches linearly.
  std::string wide = "{";
  for (int i = 0; i < 100'000; ++i) wide += "\"k" + std::to_string(i) + "\":0,";
  wide.back() = '}';
  t0 = cpu_seconds();
  EXPECT_EQ(read_ok<ojson>(wide).size(), 100'000u);
  EXPECT_LT(cpu_seconds() - t0, 0.5);
}

TEST(JsonReader, CapsNameWhereTheyHit) {
  JsonReadLimits l;
  l.max_depth = 3;
  l.max_elements = 10;
  l.max_string_bytes = 4;
  EXPECT_NO_THROW(read_ok<ojson>(R"({"a":[["abcd"]]})", l));
  JsonReadError e = read_fails(R"({"a":[[["x"]]]})", l);
  EXPECT_EQ(e.kind, JsonReadError::Kind::too_deep);
  EXPECT_EQ(e.path, "a[0][0]");
  e = read_fails(R"({"a":[1,2,3,4,5,6,7,8,9,10]})", l);
  EXPECT_EQ(e.kind, JsonReadError::Kind::too_many_elements);
  EXPECT_EQ(e.path, "a[8]");
  e = read_fails(R"({"a":"abcde"})", l);
  EXPECT_EQ(e.kind, JsonReadError::Kind::string_too_long);
  EXPECT_EQ(e.path, "a");
  e = read_fails(R"({"abcde":1})", l);
  EXPECT_EQ(e.kind, JsonReadError::Kind::string_too_long);
  // A million open brackets: refused at the cap, no recursion.
  EXPECT_EQ(read_fails(std::string(1'000'000, '['), l).kind, JsonReadError::Kind::too_deep);
}

TEST(JsonReader, NumbersOutsideADoubleNameFieldAndByte) {
  const std::string text = R"({"a":[1,{"max_tokens":1e400}]})";
  const JsonReadError e = read_fails(text);
  EXPECT_EQ(e.kind, JsonReadError::Kind::number_out_of_range);
  EXPECT_EQ(e.path, "a[1].max_tokens");
  ASSERT_TRUE(e.has_byte);
  EXPECT_EQ(e.byte, text.find("1e400"));
  EXPECT_EQ(e.detail, "1e400");
  EXPECT_NE(e.describe().find("a[1].max_tokens"), std::string::npos) << e.describe();
  // An integer too long for 64 bits is read as a double; past a double, refused the same way.
  EXPECT_EQ(read_fails("[" + std::string(400, '9') + "]").kind, JsonReadError::Kind::number_out_of_range);
  EXPECT_EQ(read_ok<ojson>("[" + std::string(30, '9') + "]")[0].is_number_float(), true);
}

TEST(JsonReader, SyntaxErrorsGiveTheByte) {
  const JsonReadError e = read_fails(R"({"a": tru})");
  EXPECT_EQ(e.kind, JsonReadError::Kind::syntax);
  EXPECT_TRUE(e.has_byte);
  EXPECT_EQ(e.byte, 10u);  // nlohmann's count: the bytes read when it saw the error
  EXPECT_EQ(e.detail.find("[json.exception"), std::string::npos) << e.detail;
  // The token nlohmann quotes is escaped: a NUL in the text cannot cut the message.
  const JsonReadError nul = read_fails(std::string("{\"a\":\"x\0y\"}", 11));
  EXPECT_EQ(nul.detail.find('\0'), std::string::npos);
}

TEST(JsonReader, ShouldStopIsPolledAndEndsTheParse) {
  int polls = 0;
  JsonReadLimits l;
  l.should_stop = [&] { return ++polls == 3; };
  const std::string list = object_list(1'000'000);
  const JsonReadError e = read_fails(list, l);
  EXPECT_EQ(e.kind, JsonReadError::Kind::stopped);
  EXPECT_EQ(polls, 3);
  polls = -1'000'000;  // never true: the whole list parses, polled every kJsonStopCheckEvents events
  EXPECT_EQ(read_ok<ojson>(list, l)["x"].size(), objects_in(list));
  EXPECT_GE(polls + 1'000'000, 1'000'000 / static_cast<int>(kJsonStopCheckEvents) / 3);
}

TEST(JsonReader, FilesFailWithSourceAndByte) {
  try {
    read_json_file(R"({"rope_theta": 1e999})", "/m/config.json", 100);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/m/config.json"), std::string::npos) << m;
    EXPECT_NE(m.find("rope_theta"), std::string::npos) << m;
    EXPECT_NE(m.find("byte 115"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace qvl
