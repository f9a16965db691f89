// RequestParser: framing, every limit and the status it answers, chunked
// bodies, pipelined buffers, HTTP/1.0 keep-alive rules, bytes split anywhere.
#include "http/http_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace qvl {
namespace {

// Feeds `bytes` in pieces of `step` (0: at once); returns the bytes consumed.
size_t feed(RequestParser& p, const std::string& bytes, size_t step = 0) {
  size_t used = 0;
  if (step == 0) return p.feed(bytes);
  while (used < bytes.size() && !p.complete() && !p.failed()) {
    const std::string_view piece = std::string_view(bytes).substr(used, step);
    used += p.feed(piece);
  }
  return used;
}

int status_of(const std::string& bytes, const ParserLimits& limits = {}) {
  RequestParser p(limits);
  feed(p, bytes);
  return p.failed() ? p.error().status : p.complete() ? 200 : 0;
}

TEST(HttpParser, GetWithHeaders) {
  RequestParser p;
  const std::string req = "GET /v1/models?x=1 HTTP/1.1\r\nHost: localhost:8080\r\nX-Thing:  a b \r\n\r\n";
  EXPECT_EQ(feed(p, req), req.size());
  ASSERT_TRUE(p.complete());
  HttpRequest& r = p.request();
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/v1/models?x=1");
  EXPECT_EQ(r.path, "/v1/models");
  EXPECT_EQ(r.query, "x=1");
  EXPECT_EQ(r.version_minor, 1);
  EXPECT_EQ(r.header("host"), "localhost:8080");
  EXPECT_EQ(r.header("x-thing"), "a b");
  EXPECT_TRUE(r.keep_alive);
  EXPECT_TRUE(r.body.empty());
}

TEST(HttpParser, BodyByContentLengthSplitAtEveryByte) {
  const std::string req = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world";
  for (size_t step : {1, 2, 3, 7, 1000}) {
    RequestParser p;
    EXPECT_EQ(feed(p, req, step), req.size()) << step;
    ASSERT_TRUE(p.complete()) << step;
    EXPECT_EQ(p.request().body, "hello world");
  }
}

TEST(HttpParser, ChunkedBodyWithExtensionsAndTrailer) {
  const std::string req =
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n";
  for (size_t step : {1, 4, 1000}) {
    RequestParser p;
    EXPECT_EQ(feed(p, req, step), req.size());
    ASSERT_TRUE(p.complete()) << step;
    EXPECT_EQ(p.request().body, "hello world");
  }
}

TEST(HttpParser, PipelinedRequestsAreLeftForTheNextParser) {
  const std::string one = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n";
  const std::string two = "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi";
  const std::string both = one + two;
  RequestParser p;
  const size_t used = p.feed(both);
  EXPECT_EQ(used, one.size());
  EXPECT_EQ(p.request().path, "/a");
  RequestParser q;
  EXPECT_EQ(q.feed(std::string_view(both).substr(used)), two.size());
  ASSERT_TRUE(q.complete());
  EXPECT_EQ(q.request().body, "hi");
}

TEST(HttpParser, EmptyLinesBeforeARequestAreSkipped) {
  RequestParser p;
  EXPECT_FALSE(p.started());
  p.feed("\r\n\r\n");
  EXPECT_FALSE(p.started());
  p.feed("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(p.complete());
}

TEST(HttpParser, BareLineFeedsAreAccepted) {
  RequestParser p;
  p.feed("GET / HTTP/1.1\nHost: a\n\n");
  EXPECT_TRUE(p.complete());
}

TEST(HttpParser, Http10ClosesUnlessAskedAndNeedsNoHost) {
  RequestParser a;
  a.feed("GET / HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(a.complete());
  EXPECT_EQ(a.request().version_minor, 0);
  EXPECT_FALSE(a.request().keep_alive);
  RequestParser b;
  b.feed("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  EXPECT_TRUE(b.request().keep_alive);
  RequestParser c;
  c.feed("GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n");
  EXPECT_FALSE(c.request().keep_alive);
}

TEST(HttpParser, ExpectContinueIsReportedUntilTheBodyStarts) {
  RequestParser p;
  p.feed("POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_TRUE(p.expects_continue());
  p.feed("h");
  EXPECT_FALSE(p.expects_continue());
  p.feed("i");
  EXPECT_TRUE(p.complete());
}

TEST(HttpParser, HeaderTooLargeIs431) {
  ParserLimits l;
  l.max_header_bytes = 1024;
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(2000, 'a') + "\r\n\r\n", l), 431);
  // Refused before the end arrives: the bytes are not kept.
  RequestParser p(l);
  p.feed("GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(2000, 'a'));
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.error().status, 431);
  l.max_header_fields = 3;
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", l), 431);
}

TEST(HttpParser, LongUriIs414) {
  ParserLimits l;
  l.max_uri_bytes = 100;
  EXPECT_EQ(status_of("GET /" + std::string(200, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n", l), 414);
  RequestParser p(l);
  p.feed("GET /" + std::string(500, 'a'));  // no end of line yet
  EXPECT_EQ(p.error().status, 414);
}

TEST(HttpParser, BodyOverTheCapIs413BeforeItArrives) {
  ParserLimits l;
  l.max_body_bytes = 100;
  RequestParser p(l);
  p.feed("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n");
  ASSERT_TRUE(p.failed());
  EXPECT_EQ(p.error().status, 413);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n", l), 413);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'a') +
                          "\r\n40\r\n",
                      l),
            413);
}

TEST(HttpParser, AmbiguousFramingIs400) {
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"), 400);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na"), 400);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1,1\r\n\r\na"), 400);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(status_of("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400);
  EXPECT_EQ(status_of("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n"), 400);
}

TEST(HttpParser, MalformedHeadsAre400) {
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\n\r\n"), 400);  // no Host
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /  HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1 x\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET x HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(status_of("G(T / HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTX/1.1\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), 400);  // space before the colon
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nHost: a\r\nNo colon\r\n\r\n"), 400);
  EXPECT_EQ(status_of(std::string("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", 35)), 400);
  EXPECT_EQ(status_of("GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
}

TEST(HttpParser, AbsoluteFormTargetGivesPathAndHost) {
  RequestParser p;
  p.feed("GET http://example.com:81/v1/models?q HTTP/1.1\r\nHost: other\r\n\r\n");
  ASSERT_TRUE(p.complete());
  EXPECT_EQ(p.request().path, "/v1/models");
  EXPECT_EQ(p.request().header("Host"), "example.com:81");
  EXPECT_EQ(p.request().headers.count("Host"), 1u);
}

TEST(HttpParser, OptionsStar) {
  RequestParser p;
  p.feed("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(p.complete());
}

}  // namespace
}  // namespace qvl
