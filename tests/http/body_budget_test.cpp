// HttpServer's bound on request bodies held at once (max_body_memory): the
// connection whose bytes would pass it gets 503 with Retry-After, the others
// go on, and the budget comes back once a handler has finished.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "http/http_server.h"

namespace qvl {
namespace {

using namespace std::chrono_literals;

class Client {
 public:
  explicit Client(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Client() { ::close(fd_); }
  void send_all(const std::string& s) {
    for (size_t off = 0; off < s.size();) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;  // the server refused and closed: the answer says why
      off += static_cast<size_t>(n);
    }
  }
  void post_head(size_t content_length) {
    send_all("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(content_length) + "\r\n\r\n");
  }
  // The status line and head of the next answer ("" on timeout).
  std::string head() {
    std::string got;
    char c;
    while (got.find("\r\n\r\n") == std::string::npos && ::recv(fd_, &c, 1, 0) == 1) got += c;
    return got;
  }

 private:
  int fd_;
};

struct BudgetServer {
  explicit BudgetServer(size_t budget) {
    HttpServerOptions o;
    o.max_body_memory = budget;
    o.limits.max_body_bytes = budget;
    o.workers = 2;
    server = std::make_unique<HttpServer>(o, [](HttpRequest& req, HttpResponse& res) {
      res.status = 200;
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    port = server->listen();
    loop = std::thread([this] { server->run(); });
  }
  ~BudgetServer() {
    server->stop();
    loop.join();
  }
  std::unique_ptr<HttpServer> server;
  int port = 0;
  std::thread loop;
};

// Gives the event loop time to read what was sent.
void settle() { std::this_thread::sleep_for(200ms); }

TEST(BodyBudget, TheBodyThatWouldPassTheBudgetIs503AndTheOthersGoOn) {
  constexpr size_t kKiB = 1024;
  BudgetServer s(1000 * kKiB);
  Client a(s.port), b(s.port);
  a.post_head(600 * kKiB);
  a.send_all(std::string(500 * kKiB, 'a'));  // held: 500 KiB
  settle();
  b.post_head(600 * kKiB);
  b.send_all(std::string(400 * kKiB, 'b'));  // held: 900 KiB
  settle();
  b.send_all(std::string(200 * kKiB, 'b'));  // 1100 KiB would be held: b is refused
  const std::string refused = b.head();
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;

  a.send_all(std::string(100 * kKiB, 'a'));  // a completes within what is left
  EXPECT_EQ(a.head().rfind("HTTP/1.1 200", 0), 0u);

  // Once a's handler has finished, its bytes are free again: a body as
  // large as the budget allows is taken whole.
  settle();
  Client c(s.port);
  c.post_head(990 * kKiB);
  c.send_all(std::string(990 * kKiB, 'c'));
  EXPECT_EQ(c.head().rfind("HTTP/1.1 200", 0), 0u);
}

TEST(BodyBudget, ARefusalLeavesTheServerHealthy) {
  BudgetServer s(64 << 10);
  Client a(s.port), b(s.port);
  a.post_head(60 << 10);
  a.send_all(std::string(40 << 10, 'a'));
  settle();
  b.post_head(60 << 10);
  b.send_all(std::string(40 << 10, 'b'));
  EXPECT_EQ(b.head().rfind("HTTP/1.1 503", 0), 0u);
  Client c(s.port);
  c.send_all("GET /x HTTP/1.1\r\nHost: x\r\n\r\n");  // no body: nothing to hold
  EXPECT_EQ(c.head().rfind("HTTP/1.1 200", 0), 0u);
  a.send_all(std::string(20 << 10, 'a'));
  EXPECT_EQ(a.head().rfind("HTTP/1.1 200", 0), 0u);
}

// A budget smaller than the largest body allowed would refuse that body
// forever with a "retry later": a configuration error, said at once.
TEST(BodyBudget, MustHoldTheLargestBodyAllowed) {
  HttpServerOptions o;
  o.limits.max_body_bytes = 2 << 20;
  o.max_body_memory = 1 << 20;
  HttpServer server(o, [](HttpRequest&, HttpResponse&) {});
  try {
    server.listen();
    FAIL() << "listen() accepted a body budget below max_body_bytes";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("max_body_memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qvl
