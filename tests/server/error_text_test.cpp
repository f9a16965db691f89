// Client text quoted into an ApiError: control characters escaped, nothing
// cut at a NUL (what() is a C string).
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/json_limits.h"
#include "server/server_options.h"

namespace qvl {
namespace {

JsonLimits server_limits() {
  const ServerOptions o;
  return request_json_limits(o.json_max_depth, o.media.max_image_bytes);
}

// The error a body gets; status 0 if none.
ApiError refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "");
}

ApiError chat_refusal(const std::string& body) {
  return refusal([&] { parse_chat_request(parse_json_body(body, server_limits()), ChatLimits{}); });
}

TEST(ErrorMessages, ClientTextWithNulIsEscapedNotCut) {
  const ApiError e = chat_refusal(R"({"messages":[{"role":"user","content":"hi"}],"bad\u0000key\ntail":1})");
  EXPECT_EQ(e.status(), 400);
  const std::string message = e.to_json()["error"]["message"];
  EXPECT_NE(message.find("bad\\u0000key\\ntail"), std::string::npos) << message;
  EXPECT_EQ(message.find('\0'), std::string::npos);
  EXPECT_EQ(std::string(e.what()), message);  // what(), a C string, holds all of it
  EXPECT_EQ(e.to_json()["error"]["param"], "bad\\u0000key\\ntail");
  const ApiError direct(400, "x", std::string("a\0b", 3), std::string("p\0q", 3));
  EXPECT_EQ(std::string(direct.what()), "a\\u0000b");
  EXPECT_EQ(direct.param(), "p\\u0000q");
}

}  // namespace
}  // namespace qvl
