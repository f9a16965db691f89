// Client text quoted into an ApiError: control characters escaped, nothing
// cut at a NUL (what() is a C string).
#include <gtest/gtest.h>

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
