// The image-embedding cache and prefix reuse across slots: the LRU cache on
// its own (keys, byte bound, eviction order), then the engine on the fixture
// model: a second request in another slot reuses the image's embeddings or
// the first conversation's K/V, with exactly the greedy tokens of a cold run.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/image_cache.h"
#include "image/image.h"
#include "engine_fixtures.h"
#include "image/preprocess.h"

namespace qvl {
namespace {

using namespace engine_test;

std::shared_ptr<const Image> image(const std::string& name) { return fixture_image(name + ".png"); }

std::shared_ptr<ImageFeatures> features(size_t floats) {
  auto f = std::make_shared<ImageFeatures>();
  f->embeds.assign(floats, 1.0f);
  return f;
}

ImageKey key(uint64_t h) {
  ImageKey k;
  k.hash = h;
  return k;
}

TEST(ImageCache, SipHashMatchesThePapersVectors) {
  // Aumasson & Bernstein 2012: key 00..0f; the empty message (the reference
  // implementation's first test vector) and the paper's 15-byte example 00..0e.
  const uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
  uint8_t msg[15];
  for (int i = 0; i < 15; ++i) msg[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(sip_hash(k0, k1, msg, 0, 2, 4), 0x726fdb47dd0e0e31ull);
  EXPECT_EQ(sip_hash(k0, k1, msg, 15, 2, 4), 0xa129ca6149be45e5ull);
}

TEST(ImageCache, KeysFollowThePixelsAndThePreprocessing) {
  const Image img = *image("gradient_320x240");
  EXPECT_EQ(image_key(img, 0, 0, 7), image_key(img, 0, 0, 7));
  EXPECT_NE(image_key(img, 0, 0, 7).hash, 0u);
  Image changed = img;
  changed.rgb[changed.rgb.size() / 2] ^= 1;
  EXPECT_NE(image_key(changed, 0, 0, 7), image_key(img, 0, 0, 7));
  EXPECT_NE(image_key(img, 0, 1 << 16, 7), image_key(img, 0, 0, 7));  // another max_pixels
  EXPECT_NE(image_key(img, 1024, 0, 7), image_key(img, 0, 0, 7));     // another min_pixels
  EXPECT_NE(image_key(img, 0, 0, 8).hash, image_key(img, 0, 0, 7).hash);  // the seed is a key
  // The same bytes seen with another width are another image.
  Image reshaped = img;
  std::swap(reshaped.width, reshaped.height);
  EXPECT_NE(image_key(reshaped, 0, 0, 7), image_key(img, 0, 0, 7));
}

TEST(ImageCache, EvictsTheLeastRecentlyUsedToStayWithinItsBytes) {
  const size_t entry = features(1000)->bytes();
  ImageEmbeddingCache cache(entry * 5 / 2);  // room for two
  cache.insert(key(1), features(1000));
  cache.insert(key(2), features(1000));
  EXPECT_NE(cache.find(key(1)), nullptr);  // 1 is now the most recently used
  cache.insert(key(3), features(1000));    // evicts 2
  EXPECT_EQ(cache.find(key(2)), nullptr);
  EXPECT_NE(cache.find(key(1)), nullptr);
  EXPECT_NE(cache.find(key(3)), nullptr);
  ImageCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.bytes, 2 * entry);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.misses, 1u);

  // A bigger entry pushes out as many as it needs; one over the bound is not kept.
  cache.insert(key(4), features(2000));
  EXPECT_EQ(cache.find(key(1)), nullptr);
  EXPECT_EQ(cache.find(key(3)), nullptr);
  EXPECT_LE(cache.stats().bytes, cache.capacity());
  cache.insert(key(5), features(4000));
  EXPECT_EQ(cache.find(key(5)), nullptr);
  EXPECT_NE(cache.find(key(4)), nullptr);

  // A key whose hash matches but whose geometry differs is a miss.
  ImageKey other = key(4);
  other.width = 3;
  EXPECT_EQ(cache.find(other), nullptr);

  ImageEmbeddingCache off(0);
  off.insert(key(1), features(10));
  EXPECT_EQ(off.find(key(1)), nullptr);
  EXPECT_EQ(off.stats().bytes, 0u);
}

// ---- the engine

std::unique_ptr<Engine> make_engine(int slots, size_t image_cache_bytes = size_t{64} << 20) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.threads = 2;
  p.ctx_size = 512 * slots;
  p.slots = slots;
  p.image_cache_bytes = image_cache_bytes;
  return Engine::create(p);
}


std::vector<Message> ask(const std::string& system, std::shared_ptr<const Image> img, const std::string& question) {
  std::vector<Message> m;
  if (!system.empty()) m.push_back({"system", {{system, nullptr}}});
  m.push_back({"user", {{"", std::move(img)}, {question, nullptr}}});
  return m;
}

// One request on one of `slots` (the engine picks), stepped to the end.
GenerateResult run_on(Engine& e, const GenerateRequest& req, std::vector<int> slots, int* used = nullptr) {
  GenerateCallbacks cb;
  Engine::RunPtr run = e.begin(req, cb, slots);
  if (used) *used = e.run_slot(*run);
  while (e.step(*run)) {
  }
  return e.end(*run);
}

TEST(EngineCache, SameImageInAnotherSlotSkipsTheVisionEncoder) {
  auto e = make_engine(2);
  const auto img = image("gradient_320x240");
  const GenerateRequest second = greedy_request(ask("Answer in French.", img, "What colors are there?"), 12);
  const GenerateResult cold = run_on(*e, second, {0});
  EXPECT_EQ(cold.timings.image_cache_misses, 1);
  EXPECT_EQ(cold.timings.image_cache_hits, 0);

  e->reset();  // forgets the K/V and the image embeddings
  const GenerateResult first = run_on(*e, greedy_request(ask("Be brief.", img, "What is in this image?"), 4), {0});
  EXPECT_EQ(first.timings.image_cache_misses, 1);
  // The system prompts differ, so the image is in the recomputed part of the
  // second request: its embeddings come from the cache.
  const GenerateResult warm = run_on(*e, second, {1});
  EXPECT_EQ(warm.timings.image_cache_hits, 1);
  EXPECT_EQ(warm.timings.image_cache_misses, 0);
  EXPECT_LT(warm.cached_tokens, 10);
  EXPECT_EQ(warm.token_ids, cold.token_ids);
  EXPECT_EQ(warm.text, cold.text);
  const ImageCacheStats s = e->image_cache_stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_GT(s.bytes, 80u * sizeof(float));  // 80 tokens x out_hidden, plus DeepStack levels
}

TEST(EngineCache, FollowUpInAnotherSlotCopiesTheConversationPrefix) {
  const nlohmann::json* two_turn = nullptr;
  for (const auto& p : manifest()["prompts"])
    if (p["name"] == "two_turn") two_turn = &p;
  ASSERT_NE(two_turn, nullptr);
  // system, user(image, text), assistant, user(text): rebuilt from the manifest.
  std::vector<Message> full;
  for (const auto& m : (*two_turn)["messages"]) {
    Message msg;
    msg.role = m["role"];
    if (m["content"].is_string()) {
      msg.parts.push_back({m["content"].get<std::string>(), nullptr});
    } else {
      for (const auto& part : m["content"]) {
        if (part["type"] == "image") msg.parts.push_back({"", image(part["image"])});
        else msg.parts.push_back({part["text"].get<std::string>(), nullptr});
      }
    }
    full.push_back(std::move(msg));
  }
  auto e = make_engine(2);
  run_on(*e, greedy_request({full.begin(), full.begin() + 2}, 4), {0});
  // Slot 1 is empty: the prefix (system, image, first question) comes from slot 0.
  const GenerateResult r = run_on(*e, greedy_request(full, 16), {1});
  EXPECT_GT(r.cached_tokens, 80);
  EXPECT_LT(r.cached_tokens, r.prompt_tokens);
  EXPECT_EQ(r.timings.image_cache_hits + r.timings.image_cache_misses, 0);  // the image was in the prefix
  EXPECT_EQ(r.token_ids, (*two_turn)["generated_ids"].get<std::vector<int32_t>>());
}

TEST(EngineCache, BeginPicksTheFreeSlotHoldingThePrefix) {
  auto e = make_engine(3);
  const auto img = image("tiny_40x36");
  int used = -1;
  run_on(*e, greedy_request(ask("", img, "Describe it."), 2), {1}, &used);
  EXPECT_EQ(used, 1);
  run_on(*e, greedy_request(ask("", image("odd_313x97"), "Describe it."), 2), {2}, &used);
  // The same conversation again goes where it is cached...
  const GenerateResult again = run_on(*e, greedy_request(ask("", img, "Describe it."), 2), {0, 1, 2}, &used);
  EXPECT_EQ(used, 1);
  EXPECT_EQ(again.cached_tokens, again.prompt_tokens - 1);
  // ...and an unrelated one to the least recently used slot (0, never used),
  // keeping the others' prefixes.
  run_on(*e, greedy_request({{"user", {{"Write a haiku about autumn.", nullptr}}}}, 2), {0, 1, 2}, &used);
  EXPECT_EQ(used, 0);
}

TEST(EngineCache, EvictionAndOtherPreprocessingMiss) {
  const auto a = image("gradient_320x240");
  const auto b = image("text_400x128");
  // Room for one image's embeddings only (a: 80 tokens, b: 75).
  size_t a_bytes = 0;
  {
    auto probe = make_engine(1);
    run_on(*probe, greedy_request(ask("", a, "What is it?"), 1), {0});
    a_bytes = probe->image_cache_stats().bytes;
  }
  auto e = make_engine(1, a_bytes * 3 / 2);
  auto misses = [&](std::shared_ptr<const Image> img, const std::string& system) {
    // A different system prompt each time keeps the KV prefix from covering the image.
    return run_on(*e, greedy_request(ask(system, std::move(img), "What is it?"), 1), {0}).timings.image_cache_misses;
  };
  EXPECT_EQ(misses(a, "one"), 1);
  EXPECT_EQ(misses(a, "two"), 0);
  EXPECT_EQ(misses(b, "three"), 1);  // evicts a
  EXPECT_EQ(misses(a, "four"), 1);
  EXPECT_EQ(e->image_cache_stats().entries, 1u);
  EXPECT_GE(e->image_cache_stats().evictions, 2u);

  // The same picture resized (as the server does for a per-request pixel
  // range) is other pixels and another grid: a miss.
  const ResizedSize half = smart_resize(a->height / 2, a->width / 2, 32, 1, 1 << 30);
  auto smaller = std::make_shared<Image>(resize_bicubic(*a, half.width, half.height));
  EXPECT_EQ(misses(smaller, "five"), 1);
}

}  // namespace
}  // namespace qvl
