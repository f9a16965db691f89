// qvl serve --memory-budget: one budget for decoded media and the engine's
// KV caches. The KV caches of --ctx-size are reserved from it at start (a
// budget that cannot hold them is a one-line error and exit 1), and a
// request whose image cannot fit beside them is 413 at once, through chat
// and jobs alike, while text requests are answered.
#include "../cli/run_qvl.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

// 800x600: 1440000 bytes of pixels decoded.
const std::string kLarge = "data:image/png;base64," + base64(read_file(kFixtures + "/golden/images/large_800x600.png"));

TEST(MemoryBudget, AnImageOverWhatTheKvCachesLeaveIs413) {
  ServerProcess s(media_budget_args(1 << 20));
  auto c = s.client();
  for (const char* path : {"/v1/chat/completions", "/v1/jobs"}) {
    auto r = post_json(c, path, chat_body("What is this?", kLarge, 2));
    ASSERT_TRUE(r) << path;
    ASSERT_EQ(r->status, 413) << path << ": " << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["code"], "image_too_large");
    EXPECT_EQ(e["param"].get<std::string>().rfind("messages[0].content[0].image_url", 0), 0u) << e;
    const std::string m = e["message"];
    EXPECT_EQ(m.rfind("decoding this image needs ", 0), 0u) << m;
    EXPECT_NE(m.find(" bytes, over the server's image memory budget of 1048576 bytes (1 MiB: what --memory-budget "
                     "leaves beside the KV caches); send smaller images or fewer per request"),
              std::string::npos)
        << m;
  }
  // n = 8 choices of up to 100 tokens: 7 more KV caches of ~110 positions x 2048 bytes, over 1 MiB.
  json many = chat_body("Hello", "", 100);
  many["n"] = 8;
  auto r = post_json(c, "/v1/chat/completions", many);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 413) << r->body;
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "request_too_large");
  EXPECT_EQ(e["param"], "n");
  EXPECT_NE(e["message"].get<std::string>().find("the KV caches of the 7 choices after the first need up to "),
            std::string::npos) << e;
  many["n"] = 2;
  many["max_tokens"] = 4;
  r = post_json(c, "/v1/chat/completions", many);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // Text needs no media: answered, and the server is healthy.
  r = post_json(c, "/v1/chat/completions", chat_body("Hello", "", 2));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // A smaller image fits beside the KV caches.
  r = post_json(c, "/v1/chat/completions", chat_body("What is this?", png_data_uri(), 2));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(MemoryBudget, KvCachesOverTheBudgetStopTheStart) {
  const QvlResult r = run_qvl({"serve", "--model", kTinyModel, "--port", "0", "--threads", "1", "--kv-type", "f32",
                               "--jobs-db", "memory", "--memory-budget", std::to_string(8 << 20)});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("\nqvl serve: the KV caches of --ctx-size 8192 (f32) need 16777216 bytes (16 MiB), over the "
                       "memory budget of 8388608 bytes (--memory-budget); lower --ctx-size, use --kv-type f16, or "
                       "raise --memory-budget\n"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace qvl::test
