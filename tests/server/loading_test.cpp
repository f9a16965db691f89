// The server answers before the model is loaded: /health 503 "loading",
// the API 503 with Retry-After; then 200 once the engine is attached. In
// process, so the loading phase can be held open as long as the test needs.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/server.h"

namespace qvl {
namespace {

TEST(Loading, HealthIs503UntilTheEngineIsAttached) {
  ServerOptions o;
  o.port = 0;
  Server server(o, "tiny");
  const int port = server.start();
  httplib::Client c("127.0.0.1", port);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  EXPECT_EQ(nlohmann::json::parse(h->body)["status"], "loading");
  auto api = c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})", "application/json");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 503);
  EXPECT_TRUE(api->has_header("Retry-After"));
  EXPECT_EQ(nlohmann::json::parse(api->body)["error"]["code"], "loading");

  EngineParams p;
  p.model_dir = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";
  p.threads = 1;
  p.ctx_size = 512;
  server.attach(Engine::create(p));
  EXPECT_EQ(c.Get("/health")->status, 200);
  auto r = c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})",
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(server.shutdown());
  server.wait();
}

TEST(Loading, ATakenPortIsAnError) {
  ServerOptions o;
  o.port = 0;
  Server first(o, "a");
  o.port = first.start();
  Server second(o, "b");
  EXPECT_THROW(second.start(), std::exception);
  first.shutdown();
  first.wait();
}

}  // namespace
}  // namespace qvl
