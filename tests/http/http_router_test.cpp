// HttpRouter: dispatch by method and pattern, and the route names the
// server's logs, metrics and checks read from it.
#include "http/http_router.h"

#include <gtest/gtest.h>

namespace qvl {
namespace {

HttpRouter jobs_router(std::string& ran) {
  HttpRouter r;
  r.post("/v1/jobs", [&](HttpRequest&, HttpResponse&) { ran = "post"; });
  r.get("/v1/jobs/{id}", R"(/v1/jobs/([a-z0-9]{1,8}))", [&](HttpRequest& q, HttpResponse&) { ran = "get " + q.matches[1]; });
  r.del("/v1/jobs/{id}", R"(/v1/jobs/([a-z0-9]{1,8}))", [&](HttpRequest&, HttpResponse&) { ran = "delete"; });
  return r;
}

TEST(HttpRouter, DispatchesByMethodAndPattern) {
  std::string ran;
  const HttpRouter r = jobs_router(ran);
  HttpRequest req;
  HttpResponse res;
  req.method = "GET";
  req.path = "/v1/jobs/ab12";
  EXPECT_EQ(r.dispatch(req, res), HttpRouter::Match::Found);
  EXPECT_EQ(ran, "get ab12");
  req.method = "HEAD";
  EXPECT_EQ(r.dispatch(req, res), HttpRouter::Match::Found);
  req.method = "POST";
  EXPECT_EQ(r.dispatch(req, res), HttpRouter::Match::NoMethod);
  req.method = "GET";
  req.path = "/v1/jobs/NOT-AN-ID";
  EXPECT_EQ(r.dispatch(req, res), HttpRouter::Match::NoPath);
}

TEST(HttpRouter, NamesThePathsItRoutes) {
  std::string ran;
  const HttpRouter r = jobs_router(ran);
  ASSERT_NE(r.name_of("/v1/jobs"), nullptr);
  EXPECT_EQ(*r.name_of("/v1/jobs"), "/v1/jobs");
  ASSERT_NE(r.name_of("/v1/jobs/ab12"), nullptr);
  EXPECT_EQ(*r.name_of("/v1/jobs/ab12"), "/v1/jobs/{id}");
  // A malformed id is still a request for that route, not a raw label.
  ASSERT_NE(r.name_of("/v1/jobs/NOT-AN-ID"), nullptr);
  EXPECT_EQ(*r.name_of("/v1/jobs/NOT-AN-ID"), "/v1/jobs/{id}");
  EXPECT_EQ(r.name_of("/v1/job"), nullptr);
  EXPECT_EQ(r.name_of("/index.html"), nullptr);
  EXPECT_TRUE(r.has("POST", "/v1/jobs"));
  EXPECT_TRUE(r.has("DELETE", "/v1/jobs/{id}"));
  EXPECT_FALSE(r.has("POST", "/v1/jobs/{id}"));
}

}  // namespace
}  // namespace qvl
