// Request bodies as the routes read them: parse_json_body with the server's
// limits. Linear time, caps before work grows, numbers outside a double.
#include <gtest/gtest.h>

#include <ctime>

#include "server/requests/api_error.h"
#include "server/requests/chat_request.h"
#include "server/requests/json_limits.h"
#include "server/server_options.h"
#include "refusal.h"

namespace qvl {
namespace {

using test::chat_refusal;
using test::refusal;
using test::server_limits;

using ojson = nlohmann::ordered_json;

std::string object_list(size_t bytes) {
  std::string s = "{\"x\":[";
  while (s.size() + 4 < bytes) s += "{},";
  return s + "{}]}";
}

// CPU seconds of this process: the parse's own work, not how busy the machine is.
double cpu_seconds(const std::function<void()>& f) {
  const std::clock_t t0 = std::clock();
  f();
  return static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
}

TEST(JsonBody, OneMegabyteObjectListIsFast) {
  const std::string body = object_list(1'000'000);
  ApiError e(0, "", "");
  EXPECT_LT(cpu_seconds([&] { e = refusal([&] { parse_json_body(body, server_limits()); }); }), 0.5);
  EXPECT_EQ(e.status(), 0) << e.what();  // 333k values: under the cap, parsed
}

TEST(JsonBody, SixtyFourMegabyteObjectListIsRefusedByTheValueCap) {
  const std::string body = object_list(64u << 20);
  ApiError e(0, "", "");
  EXPECT_LT(cpu_seconds([&] { e = refusal([&] { parse_json_body(body, server_limits()); }); }), 0.5);
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "json_too_many_values");
  EXPECT_EQ(e.param().rfind("x[", 0), 0u) << e.param();
}

TEST(JsonBody, DepthAndStringCapsHold) {
  JsonLimits l = server_limits();
  l.max_string_bytes = 8;
  EXPECT_EQ(refusal([&] { parse_json_body(std::string(100, '[') + std::string(100, ']'), l); }).code(), "json_too_deep");
  EXPECT_EQ(refusal([&] { parse_json_body(R"({"a":"123456789"})", l); }).code(), "string_too_long");
  EXPECT_EQ(refusal([&] { parse_json_body(R"({"123456789":1})", l); }).code(), "string_too_long");
  EXPECT_EQ(refusal([&] { parse_json_body(R"({"a":"12345678"})", l); }).status(), 0);
  EXPECT_EQ(refusal([&] { parse_json_body("", l); }).code(), "invalid_json");
  EXPECT_EQ(refusal([&] { parse_json_body("{\"a\":", l); }).code(), "invalid_json");
}

TEST(JsonBody, ShouldStopEndsTheParseWith503) {
  const std::string body = object_list(1'000'000);
  bool client_gone = false;
  int polls = 0;
  const ApiError e = refusal([&] {
    parse_json_body(body, server_limits(), [&] {
      if (++polls == 2) client_gone = true;
      return client_gone;
    });
  });
  EXPECT_EQ(e.status(), 503);
  EXPECT_EQ(e.code(), "parse_stopped");
  EXPECT_EQ(polls, 2);
}

TEST(JsonBody, NumbersOutsideADoubleAre400NamingTheField) {
  const ApiError e = chat_refusal(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1e400})");
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.code(), "number_out_of_range");
  EXPECT_EQ(e.param(), "max_tokens");
  EXPECT_NE(std::string(e.what()).find("byte 58"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace qvl
