// request_policy: Host allowlists, same-origin and --cors-origin, JSON content types.
#include "server/requests/request_policy.h"

#include <gtest/gtest.h>

namespace qvl {
namespace {

TEST(RequestPolicy, AutoOnLoopbackAdmitsLoopbackNamesOnly) {
  const HostPolicy p("auto", "127.0.0.1");
  for (const char* ok : {"localhost", "LOCALHOST:8080", "app.localhost", "127.0.0.1:1", "127.1.2.3", "[::1]:8080"})
    EXPECT_EQ(p.refusal(ok), "") << ok;
  for (const char* bad : {"evil.example", "localhost.evil.example", "", "10.0.0.1", "[::2]"})
    EXPECT_NE(p.refusal(bad), "") << bad;
}

TEST(RequestPolicy, AutoElsewhereAdmitsAnyAndListsAreExact) {
  EXPECT_EQ(HostPolicy("auto", "0.0.0.0").refusal("evil.example"), "");
  EXPECT_EQ(HostPolicy("*", "127.0.0.1").refusal("evil.example"), "");
  const HostPolicy list("qvl.lan, .example.com", "0.0.0.0");
  EXPECT_EQ(list.refusal("QVL.lan:8080"), "");
  EXPECT_EQ(list.refusal("example.com"), "");
  EXPECT_EQ(list.refusal("a.b.example.com"), "");
  EXPECT_NE(list.refusal("badexample.com"), "");
  EXPECT_NE(list.refusal("localhost"), "");
}

TEST(RequestPolicy, OriginMustBeOwnOrAllowed) {
  EXPECT_EQ(origin_refusal("http://127.0.0.1:8080", "127.0.0.1:8080", ""), "");
  EXPECT_EQ(origin_refusal("http://Localhost", "localhost:80", ""), "");
  EXPECT_EQ(origin_refusal("https://qvl.lan", "qvl.lan:443", ""), "");
  EXPECT_NE(origin_refusal("http://evil.example", "127.0.0.1:8080", ""), "");
  EXPECT_NE(origin_refusal("http://127.0.0.1:9999", "127.0.0.1:8080", ""), "");
  EXPECT_NE(origin_refusal("null", "127.0.0.1:8080", ""), "");
  EXPECT_EQ(origin_refusal("http://app.example", "127.0.0.1:8080", "http://app.example"), "");
  EXPECT_EQ(origin_refusal("http://evil.example", "127.0.0.1:8080", "*"), "");
  EXPECT_NE(origin_refusal("http://evil.example", "127.0.0.1:8080", "").find("http://evil.example"), std::string::npos);
}

TEST(RequestPolicy, OnlyJsonBodies) {
  for (const char* ok : {"application/json", "Application/JSON; charset=UTF-8", "application/json;charset=\"utf-8\"",
                         "application/merge-patch+json"})
    EXPECT_EQ(content_type_refusal(ok), "") << ok;
  for (const char* bad : {"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=a",
                          "application/json; charset=latin1", "text/json+json"})
    EXPECT_NE(content_type_refusal(bad), "") << bad;
  EXPECT_NE(content_type_refusal("text/plain").find("text/plain"), std::string::npos);
}

}  // namespace
}  // namespace qvl
