// The caches seen from outside: a second request about the same image shows
// image-cache hits and reused prompt tokens in its `timings` and `usage`, and
// /metrics counts them; the answer is the one a cold `qvl run` gives.
#include <gtest/gtest.h>

#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

json system_and_user(const std::string& system, const std::string& question, const std::string& image_uri) {
  return json::array({{{"role", "system"}, {"content", system}}, user_message(question, image_uri)});
}

json ask(const json& messages, int max_tokens) {
  return {{"messages", messages}, {"temperature", 0}, {"max_tokens", max_tokens}};
}

json post(ServerProcess& s, const json& body) {
  auto c = s.client();
  auto r = post_json(c, "/v1/chat/completions", body);
  if (!r) throw std::runtime_error("no response");
  if (r->status != 200) throw std::runtime_error("status " + std::to_string(r->status) + ": " + r->body);
  return json::parse(r->body);
}

TEST(Caches, SecondRequestAboutTheSameImageShowsCacheHits) {
  ServerProcess s({"--parallel", "2"});
  const std::string image = png_data_uri("gradient_320x240");

  const json first = post(s, ask(system_and_user("Be brief.", "What is in this image?", image), 8));
  EXPECT_EQ(first["timings"]["image_cache_misses"], 1);
  EXPECT_EQ(first["timings"]["image_cache_hits"], 0);
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  // Another system prompt: the image is past the shared prefix, so its
  // embeddings come from the image cache and the vision encoder does not run.
  const json second = post(s, ask(system_and_user("Answer in French.", "Describe it.", image), 8));
  EXPECT_EQ(second["timings"]["image_cache_hits"], 1);
  EXPECT_EQ(second["timings"]["image_cache_misses"], 0);
  EXPECT_EQ(second["choices"][0]["message"]["content"],
            run_answer({"--system", "Answer in French.", "--prompt", "Describe it.", "--image",
                        kFixtures + "/golden/images/gradient_320x240.png"},
                       8));

  // A follow-up in the first conversation reuses its whole prefix (image included).
  json conversation = system_and_user("Be brief.", "What is in this image?", image);
  conversation.push_back({{"role", "assistant"}, {"content", first["choices"][0]["message"]["content"]}});
  conversation.push_back(user_message("And the colors?"));
  const json followup = post(s, ask(conversation, 4));
  const int64_t cached = followup["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(cached, 80);  // the system prompt, 80 image tokens, the first question
  EXPECT_EQ(followup["timings"]["cached_tokens"], cached);
  EXPECT_EQ(followup["timings"]["image_cache_hits"], 0);  // inside the reused prefix: not looked up
  EXPECT_EQ(followup["timings"]["image_cache_misses"], 0);

  EXPECT_EQ(s.metric("qvl_image_cache_hits_total"), 1);
  EXPECT_EQ(s.metric("qvl_image_cache_misses_total"), 1);
  EXPECT_EQ(s.metric("qvl_image_cache_entries"), 1);
  EXPECT_GT(s.metric("qvl_image_cache_bytes"), 0);
  EXPECT_EQ(s.metric("qvl_image_cache_capacity_bytes"), 256.0 * 1024 * 1024);
  EXPECT_GE(s.metric("qvl_prompt_tokens_cached_total"), static_cast<double>(cached));
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(Caches, ImageCacheCanBeTurnedOff) {
  ServerProcess s({"--image-cache-mb", "0"});
  const std::string image = png_data_uri("gradient_320x240");
  post(s, ask(system_and_user("Be brief.", "What is in this image?", image), 2));
  const json second = post(s, ask(system_and_user("Answer in French.", "Describe it.", image), 2));
  EXPECT_EQ(second["timings"]["image_cache_misses"], 1);
  EXPECT_EQ(s.metric("qvl_image_cache_hits_total"), 0);
  EXPECT_EQ(s.metric("qvl_image_cache_bytes"), 0);
  EXPECT_EQ(s.stop(), 0) << s.log();
}

}  // namespace
}  // namespace qvl::test
