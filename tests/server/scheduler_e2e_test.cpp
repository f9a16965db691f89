// The scheduler seen from outside: concurrency with a bounded queue (429 +
// Retry-After, same answers), deadlines (504, stream error event), clients
// that hang up (slot freed, seen in /metrics), graceful SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <thread>

#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

// A request that runs for seconds on the tiny model (thousands of tokens).
json long_body(bool stream = false) {
  json b = chat_body("Describe this image at great length.", png_data_uri(), 3000);
  if (stream) b["stream"] = true;
  return b;
}

// Sends a request on a raw socket and hangs up after `ms` without reading.
void send_and_hang_up(int port, const json& body, int ms) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string b = body.dump();
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  ASSERT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  close(fd);
}

TEST(Scheduler, EightClientsTwoSlotsFourQueuePlaces) {
  ServerProcess s({"--parallel", "2", "--queue-size", "4"});
  auto c = s.client();
  const json body = chat_body("What is in this image?", png_data_uri(), 24);
  auto alone = post_json(c, "/v1/chat/completions", body);
  ASSERT_TRUE(alone);
  ASSERT_EQ(alone->status, 200);
  const std::string expected = json::parse(alone->body)["choices"][0]["message"]["content"];

  std::vector<int> status(8, 0);
  std::vector<std::string> text(8), retry(8);
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i)
    clients.emplace_back([&, i] {
      auto cl = s.client(60);
      auto r = post_json(cl, "/v1/chat/completions", body);
      if (!r) return;
      status[i] = r->status;
      if (r->status == 200) text[i] = json::parse(r->body)["choices"][0]["message"]["content"];
      retry[i] = r->get_header_value("Retry-After");
    });
  for (auto& t : clients) t.join();
  int ok = 0;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(status[i] == 200 || status[i] == 429) << "client " << i << " got " << status[i];
    if (status[i] == 200) {
      ++ok;
      EXPECT_EQ(text[i], expected) << "client " << i;
    } else {
      EXPECT_GE(std::stoi(retry[i]), 1);
    }
  }
  EXPECT_GE(ok, 5);  // at least the slot in use and the four queue places
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(s.metric("qvl_slots_busy"), 0);
  EXPECT_EQ(s.metric("qvl_queue_depth"), 0);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Scheduler, TwoSlotsGenerateAtOnce) {
  ServerProcess s({"--parallel", "2"});
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i)
    clients.emplace_back([&] {
      auto c = s.client();
      json b = long_body();
      b["max_tokens"] = 400;
      auto r = post_json(c, "/v1/chat/completions", b);
      EXPECT_TRUE(r && r->status == 200);
    });
  EXPECT_TRUE(eventually([&] { return s.metric("qvl_slots_busy") == 2; }, 20000));
  EXPECT_EQ(s.metric("qvl_slots_total"), 2);
  for (auto& t : clients) t.join();
  EXPECT_EQ(s.metric("qvl_slots_busy"), 0);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Scheduler, DeadlinePassedIs504OrAStreamErrorEvent) {
  ServerProcess s({"--timeout", "0.5"});
  auto c = s.client();
  auto r = post_json(c, "/v1/chat/completions", long_body());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 504) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "timeout");

  auto st = post_json(c, "/v1/chat/completions", long_body(true));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->status, 200);
  const auto events = sse_events(st->body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json& err = events[events.size() - 2];
  ASSERT_TRUE(err.contains("error")) << err;
  EXPECT_EQ(err["error"]["code"], "timeout");
  EXPECT_TRUE(eventually([&] { return s.metric("qvl_slots_busy") == 0; }));
  EXPECT_EQ(s.stop(), 0);
}

TEST(Scheduler, ClientThatHangsUpFreesItsSlot) {
  ServerProcess s({"--parallel", "1"});
  // Non-streamed: the handler notices the closed socket while generating.
  std::thread t([&] { send_and_hang_up(s.port(), long_body(), 300); });
  t.join();
  EXPECT_TRUE(eventually([&] { return s.metric("qvl_generations_total{outcome=\"cancelled\"}") == 1; }, 5000))
      << s.log();
  EXPECT_EQ(s.metric("qvl_slots_busy"), 0);

  // Streamed: read the first chunk, then go away.
  auto c = s.client();
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.set_header("Content-Type", "application/json");
  req.body = long_body(true).dump();
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  auto r = c.send(req);
  EXPECT_FALSE(r);  // the client cancelled the transfer
  EXPECT_TRUE(eventually([&] { return s.metric("qvl_generations_total{outcome=\"cancelled\"}") == 2; }, 5000))
      << s.log();
  EXPECT_EQ(s.metric("qvl_slots_busy"), 0);

  // The slot serves the next request at once.
  auto ok = post_json(c, "/v1/chat/completions", chat_body("Hi", "", 4));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Scheduler, SigtermLetsRunningWorkFinishThenExitsZero) {
  ServerProcess s({"--shutdown-grace", "30"});
  std::atomic<int> status{0};
  std::thread t([&] {
    auto c = s.client();
    auto r = post_json(c, "/v1/chat/completions", chat_body("Tell me a story.", png_data_uri(), 200));
    status = r ? r->status : -1;
  });
  ASSERT_TRUE(eventually([&] { return s.metric("qvl_slots_busy") == 1; }));
  EXPECT_EQ(s.stop(), 0) << s.log();
  t.join();
  EXPECT_EQ(status.load(), 200);
}

TEST(Scheduler, SigtermCancelsWhatOutlivesTheGracePeriod) {
  ServerProcess s({"--shutdown-grace", "0.2"});
  std::atomic<int> status{0};
  std::thread t([&] {
    auto c = s.client();
    auto r = post_json(c, "/v1/chat/completions", long_body());
    status = r ? r->status : -1;
  });
  ASSERT_TRUE(eventually([&] { return s.metric("qvl_slots_busy") == 1; }));
  EXPECT_EQ(s.stop(std::chrono::seconds(20)), 0) << s.log();
  t.join();
  EXPECT_EQ(status.load(), 503);
}

}  // namespace
}  // namespace qvl::test
