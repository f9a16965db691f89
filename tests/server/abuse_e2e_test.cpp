// Clients that misbehave, against the real server: slow and idle sockets by
// the hundred, pipelining, half-close, bodies that are not JSON, foreign
// Host and Origin headers, oversized heads, heads that trickle past their
// deadline. Each answer the server owes must come within seconds.
#include <atomic>
#include <memory>
#include <thread>

#include "raw_socket.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// N sockets that trickle a request head one byte per 200 ms (or stay idle).
class Abusers {
 public:
  Abusers(int port, int n, bool trickle) {
    for (int i = 0; i < n; ++i) socks_.push_back(std::make_unique<RawSocket>(port));
    if (!trickle) return;
    thread_ = std::thread([this] {
      const std::string head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
      for (size_t k = 0; !stop_; ++k) {
        for (auto& s : socks_) s->send(std::string(1, k < head.size() ? head[k] : 'a'));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  ~Abusers() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::vector<std::unique_ptr<RawSocket>> socks_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void expect_health_and_chat_quick(ServerProcess& s) {
  auto c = s.client(10);
  auto t = Clock::now();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_LT(ms_since(t), 1000);
  t = Clock::now();
  auto r = post_json(c, "/v1/chat/completions", chat_body("hi", "", 4));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_LT(ms_since(t), 1000);
}

TEST(Abuse, TwoHundredSlowlorisConnectionsStallNothing) {
  ServerProcess s;
  Abusers slow(s.port(), 200, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  expect_health_and_chat_quick(s);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, TwoHundredIdleConnectionsStallNothing) {
  ServerProcess s;
  Abusers idle(s.port(), 200, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  expect_health_and_chat_quick(s);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, FullConnectionCapEvictsTheLongestIdle) {
  ServerProcess s({"--max-connections", "8"});
  Abusers idle(s.port(), 8, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  expect_health_and_chat_quick(s);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, PipelinedRequestsAreAnsweredInOrder) {
  ServerProcess s;
  RawSocket sock(s.port());
  const std::string body = chat_body("hi", "", 2).dump();
  ASSERT_TRUE(sock.send("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body +
                        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
  const std::string out = sock.read(10000);
  const size_t models = out.find("\"object\":\"list\"");
  const size_t chat = out.find("\"chat.completion\"");
  const size_t health = out.find("{\"status\":\"ok\"}");
  ASSERT_NE(models, std::string::npos) << out;
  ASSERT_NE(chat, std::string::npos) << out;
  ASSERT_NE(health, std::string::npos) << out;
  EXPECT_LT(models, chat);
  EXPECT_LT(chat, health);
  EXPECT_TRUE(sock.closed());  // as the last request asked
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, HalfClosedClientGetsTheWholeAnswer) {
  ServerProcess s;
  RawSocket sock(s.port());
  const std::string body = chat_body("Describe this image.", png_data_uri(), 200).dump();
  ASSERT_TRUE(sock.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
  sock.shut_write();  // RFC 9112 §9.6: done sending, still reading
  const std::string out = sock.read(30000);
  // An interim 102 may come first; the final answer is a 200 with the completion.
  const size_t final_status = out.find("HTTP/1.1 200 OK");
  ASSERT_NE(final_status, std::string::npos) << out.substr(0, 500);
  EXPECT_EQ(out.find("HTTP/1.1 499"), std::string::npos);
  const json j = json::parse(out.substr(out.find("\r\n\r\n", final_status) + 4));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 200);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, BodiesThatAreNotJsonAre415) {
  ServerProcess s;
  auto c = s.client();
  const std::string body = chat_body("hi", "", 2).dump();
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
    auto r = c.Post("/v1/chat/completions", body, type);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 415) << type;
    EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find(std::string(type).substr(0, 10)),
              std::string::npos);
  }
  EXPECT_EQ(c.Post("/v1/chat/completions", body, "application/json; charset=utf-8")->status, 200);
  EXPECT_EQ(c.Post("/tokenize", R"({"content":"hi"})", "application/vnd.api+json")->status, 200);
  EXPECT_EQ(c.Post("/tokenize", R"({"content":"hi"})", "application/json; charset=latin1")->status, 415);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, ForeignHostIsRefusedOnLoopback) {
  ServerProcess s;
  auto c = s.client();
  auto evil = c.Get("/v1/models", {{"Host", "evil.example"}});
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 403);
  EXPECT_EQ(json::parse(evil->body)["error"]["code"], "host_not_allowed");
  EXPECT_EQ(c.Get("/", {{"Host", "rebind.evil.example:8080"}})->status, 403);
  EXPECT_EQ(c.Get("/v1/models", {{"Host", "localhost:1234"}})->status, 200);
  EXPECT_EQ(c.Get("/v1/models", {{"Host", "app.localhost"}})->status, 200);
  EXPECT_EQ(c.Get("/v1/models", {{"Host", "[::1]:80"}})->status, 200);
  EXPECT_EQ(c.Get("/health", {{"Host", "evil.example"}})->status, 200);  // probes use whatever name
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, AllowedHostsListAndStar) {
  {
    ServerProcess s({"--allowed-hosts", "127.0.0.1,.example.com"});
    auto c = s.client();
    EXPECT_EQ(c.Get("/v1/models", {{"Host", "api.example.com"}})->status, 200);
    EXPECT_EQ(c.Get("/v1/models", {{"Host", "localhost"}})->status, 403);
    EXPECT_EQ(s.stop(), 0);
  }
  {
    ServerProcess s({"--allowed-hosts", "*"});
    EXPECT_EQ(s.client().Get("/v1/models", {{"Host", "evil.example"}})->status, 200);
    EXPECT_EQ(s.stop(), 0);
  }
}

TEST(Abuse, CrossSiteOriginIs403) {
  ServerProcess s;
  auto c = s.client();
  const std::string self = "http://127.0.0.1:" + std::to_string(s.port());
  auto evil = post_json(c, "/v1/chat/completions", chat_body("hi", "", 2), {{"Origin", "http://evil.example"}});
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 403);
  EXPECT_NE(evil->body.find("http://evil.example"), std::string::npos);
  EXPECT_EQ(c.Get("/v1/models", {{"Origin", "null"}})->status, 403);
  EXPECT_EQ(post_json(c, "/v1/chat/completions", chat_body("hi", "", 2), {{"Origin", self}})->status, 200);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, ApiKeyLeavesThePageOpen) {
  ServerProcess s({"--api-key", "k"});
  auto c = s.client();
  EXPECT_EQ(c.Get("/")->status, 200);
  EXPECT_EQ(c.Get("/js/app.js")->status, 200);
  EXPECT_EQ(c.Get("/style.css")->status, 200);
  EXPECT_EQ(c.Get("/v1/models")->status, 401);
  EXPECT_EQ(c.Get("/v1/qvl/config")->status, 401);
  EXPECT_EQ(c.Post("/tokenize", R"({"content":"hi"})", "application/json")->status, 401);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, HeaderTooLargeIs431) {
  ServerProcess s;
  RawSocket sock(s.port());
  sock.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(64 << 10, 'a') + "\r\n\r\n");
  const std::string out = sock.read(5000, "\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 431 ", 0), 0u) << out.substr(0, 200);
  EXPECT_EQ(s.client().Get("/health")->status, 200);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, HeadThatTricklesPastItsDeadlineGets408) {
  ServerProcess s({"--header-timeout", "1"});
  RawSocket sock(s.port());
  const auto t = Clock::now();
  const std::string head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  std::string out;
  // One byte per 100 ms: each read is quick, the request is not.
  for (char ch : head) {
    if (!sock.send(std::string(1, ch))) break;
    out += sock.read(100);
    if (!out.empty()) break;
  }
  out += sock.read(3000);
  EXPECT_EQ(out.rfind("HTTP/1.1 408 ", 0), 0u) << out;
  EXPECT_TRUE(sock.closed());
  EXPECT_LT(ms_since(t), 2500);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, BodyOverTheCapIs413WithoutReadingIt) {
  ServerProcess s({"--max-body-bytes", "2048"});
  RawSocket sock(s.port());
  sock.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 100000\r\n\r\n");
  const std::string out = sock.read(5000, "}}");
  EXPECT_EQ(out.rfind("HTTP/1.1 413 ", 0), 0u) << out;
  EXPECT_NE(out.find("--max-body-bytes"), std::string::npos);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, ExpectContinueGetsTheGoAhead) {
  ServerProcess s;
  RawSocket sock(s.port());
  sock.send("POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
            "Content-Length: 16\r\n\r\n");
  EXPECT_EQ(sock.read(3000, "\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  sock.send(R"({"content":"hi"})");
  EXPECT_EQ(sock.read(3000, "]}").rfind("HTTP/1.1 200 OK", 0), 0u);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Abuse, Http10ClientGetsAClosedAnswer) {
  ServerProcess s;
  RawSocket sock(s.port());
  sock.send("GET /health HTTP/1.0\r\n\r\n");
  const std::string out = sock.read(3000);
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK", 0), 0u) << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(sock.closed());
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace qvl::test
