// The whole pipeline on the fixture model: image file -> preprocess -> chat
// template -> tokens -> vision + decoder -> greedy tokens, against the golden
// prompts; prefix reuse across turns; stop conditions; errors.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include "engine_fixtures.h"
#include "image/image.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {
namespace {

using namespace engine_test;

const nlohmann::json& prompt_case(std::string_view name) {
  for (const auto& p : manifest()["prompts"])
    if (p["name"].get_ref<const std::string&>() == name) return p;
  throw std::runtime_error("no golden prompt " + std::string(name));
}

Engine& engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineParams p;
    p.model_dir = kFixtures + "/tiny-qwen3vl";
    p.threads = 2;
    p.ctx_size = 1024;
    return Engine::create(p);
  }();
  return *e;
}

std::shared_ptr<const Image> image(const std::string& name) {
  return fixture_image(manifest()["images"][name]["png"]);
}

// The manifest's messages with images loaded from the PNG files.
std::vector<Message> messages_of(const nlohmann::json& p) {
  std::vector<Message> out;
  for (const auto& m : p["messages"]) {
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
    out.push_back(std::move(msg));
  }
  return out;
}


std::vector<int32_t> ids(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

class EngineGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineGolden, GreedyTokensFromImageFiles) {
  const nlohmann::json& p = prompt_case(GetParam());
  engine().reset();
  const std::vector<Message> msgs = messages_of(p);
  GenerateRequest counted;
  counted.messages = msgs;
  EXPECT_EQ(static_cast<int64_t>(engine().prompt_tokens(counted).size()), p["num_tokens"].get<int64_t>());
  GenerateResult r = engine().generate(greedy_request(msgs, 16));
  EXPECT_EQ(r.token_ids, ids(p["generated_ids"]));
  EXPECT_EQ(r.text, p["generated_text_skip_special"].get<std::string>());
  EXPECT_EQ(r.prompt_tokens, p["num_tokens"].get<int64_t>());
  EXPECT_EQ(r.completion_tokens, 16);
  EXPECT_EQ(r.finish_reason, FinishReason::Length);
}

INSTANTIATE_TEST_SUITE_P(Prompts, EngineGolden,
                         ::testing::Values("image_question", "two_images", "text_only", "two_turn",
                                           "tall_image_after_text"));

TEST(Engine, SecondTurnReusesTheCachedPrefix) {
  const nlohmann::json& p = prompt_case("two_turn");
  std::vector<Message> full = messages_of(p);
  std::vector<Message> first(full.begin(), full.begin() + 2);  // system + user(image, text)
  engine().reset();
  GenerateResult r1 = engine().generate(greedy_request(first, 4));
  EXPECT_EQ(r1.cached_tokens, 0);
  GenerateResult r2 = engine().generate(greedy_request(full, 16));
  EXPECT_GT(r2.cached_tokens, 80);  // system + image + first question
  EXPECT_LT(r2.cached_tokens, r2.prompt_tokens);
  EXPECT_EQ(r2.token_ids, ids(p["generated_ids"]));
  // The same request again recomputes only its last token.
  GenerateResult r3 = engine().generate(greedy_request(full, 16));
  EXPECT_EQ(r3.cached_tokens, r3.prompt_tokens - 1);
  EXPECT_EQ(r3.token_ids, ids(p["generated_ids"]));
}

// A repeated request reuses the cached K/V of its whole prompt but the last
// token, which it recomputes as a prompt piece of one row: attention takes
// the many-query kernel (AttentionParams::prompt) and every matmul the
// arithmetic the uncached prefill gave that row (ops/matmul.h, MatmulRows),
// so its answer and every logprob keep the bits of the uncached run.
struct WeightsCase {
  WeightFormat format;
  MatmulPrecision precision;
};
void expect_repeats_keep_the_uncached_bits(const std::string& model, std::initializer_list<WeightsCase> cases) {
  for (const WeightsCase& c : cases) {
    EngineParams params;
    params.model_dir = kFixtures + "/" + model;
    params.weights = c.format;
    params.precision = c.precision;
    params.threads = 2;
    params.ctx_size = 1024;
    params.no_weight_cache = true;
    std::unique_ptr<Engine> e = Engine::create(params);
    for (const char* name : {"image_question", "two_turn"}) {
      SCOPED_TRACE(::testing::Message() << model << " " << weight_format_name(c.format) << " "
                                        << matmul_precision_name(c.precision) << " " << name);
      GenerateRequest req = greedy_request(messages_of(prompt_case(name)), 16);
      req.top_logprobs = 3;
      e->reset();
      const GenerateResult first = e->generate(req);
      const GenerateResult again = e->generate(req);
      EXPECT_EQ(first.cached_tokens, 0);
      EXPECT_EQ(again.cached_tokens, again.prompt_tokens - 1);
      EXPECT_EQ(again.token_ids, first.token_ids);
      ASSERT_EQ(again.logprobs.size(), first.logprobs.size());
      for (size_t i = 0; i < first.logprobs.size(); ++i) {
        EXPECT_EQ(again.logprobs[i].logprob, first.logprobs[i].logprob) << "token " << i;
        EXPECT_EQ(again.logprobs[i].top, first.logprobs[i].top) << "token " << i;
      }
    }
  }
}

// q8 weights run prefill and vision attention in bf16 where the CPU has the
// unit (attention_precision); their matmul rows agree for every m.
TEST(Engine, RepeatedRequestKeepsTheUncachedBitsWithQ8Weights) {
  expect_repeats_keep_the_uncached_bits("tiny-qwen3vl", {{WeightFormat::Q8, MatmulPrecision::Exact}});
}

// bf16 (exact and fast) and f32 weights: decode's small-m kernels sum a row
// in another order than the GEMM (and fast bf16 rounds x only in the GEMM),
// so the recomputed row must take the GEMM's arithmetic.
TEST(Engine, RepeatedRequestKeepsTheUncachedBitsWithBf16AndF32Weights) {
  expect_repeats_keep_the_uncached_bits("tiny-qwen3vl", {{WeightFormat::BF16, MatmulPrecision::Exact},
                                                         {WeightFormat::BF16, MatmulPrecision::Fast},
                                                         {WeightFormat::F32, MatmulPrecision::Exact}});
}

// The same through a mixture of experts: the router (bf16 or f32 even with
// q8 experts) and each chosen expert's rows of the recomputed token take the
// GEMM's arithmetic too (grouped_matmul with MatmulRows::Prompt).
TEST(Engine, RepeatedRequestKeepsTheUncachedBitsThroughExperts) {
  expect_repeats_keep_the_uncached_bits("tiny-qwen3vl-moe", {{WeightFormat::BF16, MatmulPrecision::Exact},
                                                             {WeightFormat::BF16, MatmulPrecision::Fast},
                                                             {WeightFormat::F32, MatmulPrecision::Exact},
                                                             {WeightFormat::Q8, MatmulPrecision::Exact}});
}

TEST(Engine, DifferentImageInvalidatesThePrefix) {
  const nlohmann::json& p = prompt_case("image_question");
  std::vector<Message> msgs = messages_of(p);
  engine().reset();
  engine().generate(greedy_request(msgs, 2));
  msgs[0].parts[0].image = image("tall_120x600");
  GenerateResult r = engine().generate(greedy_request(msgs, 2));
  EXPECT_EQ(r.cached_tokens, 4);  // <|im_start|> user \n <|vision_start|>
}

TEST(Engine, StreamsTheSameTextItReturns) {
  const nlohmann::json& p = prompt_case("text_only");
  engine().reset();
  std::string streamed;
  GenerateCallbacks cb;
  cb.on_text = [&](std::string_view piece) {
    streamed += piece;
    return true;
  };
  GenerateResult r = engine().generate(greedy_request(messages_of(p), 16), cb);
  EXPECT_EQ(streamed, r.text);
}

TEST(Engine, StopStringEndsTheAnswer) {
  const nlohmann::json& p = prompt_case("text_only");
  const std::string full = p["generated_text_skip_special"];
  const std::string stop = "UNIX";  // inside the golden continuation
  ASSERT_NE(full.find(stop), std::string::npos);
  GenerateRequest req = greedy_request(messages_of(p), 16);
  req.stop = {stop};
  GenerateResult r = engine().generate(req);
  EXPECT_EQ(r.finish_reason, FinishReason::Stop);
  EXPECT_EQ(r.text, full.substr(0, full.find(stop)));
}

TEST(Engine, EosFromGenerationConfigStopsUnlessIgnored) {
  // A copy of the fixture folder whose generation_config declares the first
  // golden token of text_only an end-of-sequence token.
  namespace fs = std::filesystem;
  const nlohmann::json& p = prompt_case("text_only");
  const fs::path dir = fs::path(::testing::TempDir()) / "qvl_engine_eos_model";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kFixtures + "/tiny-qwen3vl")) {
    const fs::path dst = dir / e.path().filename();
    fs::remove(dst);
    if (e.path().filename() == "model.safetensors") fs::create_symlink(fs::absolute(e.path()), dst);
    else fs::copy_file(e.path(), dst);
  }
  nlohmann::json gen = nlohmann::json::parse(std::ifstream(dir / "generation_config.json"));
  const int32_t first = p["generated_ids"][0];
  gen["eos_token_id"] = {first};
  std::ofstream(dir / "generation_config.json") << gen.dump();
  EngineParams ep;
  ep.model_dir = dir.string();
  ep.threads = 2;
  ep.ctx_size = 256;
  auto e = Engine::create(ep);
  GenerateRequest req = greedy_request(messages_of(p), 16);
  req.ignore_eos = false;
  GenerateResult r = e->generate(req);
  EXPECT_EQ(r.finish_reason, FinishReason::Stop);
  EXPECT_TRUE(r.token_ids.empty());
  EXPECT_EQ(r.text, "");
  req.ignore_eos = true;
  r = e->generate(req);
  EXPECT_EQ(r.token_ids, ids(p["generated_ids"]));
}

TEST(Engine, CancelledBeforeTheFirstToken) {
  std::atomic<bool> cancel{true};
  GenerateRequest req = greedy_request(messages_of(prompt_case("text_only")), 16);
  req.cancel = &cancel;
  GenerateResult r = engine().generate(req);
  EXPECT_EQ(r.finish_reason, FinishReason::Cancelled);
  EXPECT_TRUE(r.token_ids.empty());
}

TEST(Engine, CallbackCanStopGeneration) {
  GenerateCallbacks cb;
  int pieces = 0;
  cb.on_text = [&](std::string_view) { return ++pieces < 3; };
  GenerateResult r = engine().generate(greedy_request(messages_of(prompt_case("text_only")), 16), cb);
  EXPECT_EQ(r.finish_reason, FinishReason::Cancelled);
  EXPECT_LT(r.completion_tokens, 16);
}

// A seed gives the same tokens again, and sampling really samples: with
// top-k and top-p off, some seed leaves the greedy path and the seeds do not
// all agree (a sampler that turned greedy, or ignored its seed, fails here).
// The tiny model is sure of itself (at temperature 1 its runner-up tokens are
// 4.5 nats and more below the greedy one: under 2% of leaving the path in 8
// tokens), so the temperature is high enough to make leaving it likely.
TEST(Engine, SeededSamplingIsReproducibleAndNotGreedy) {
  const std::vector<Message> msgs = messages_of(prompt_case("text_only"));
  const GenerateResult greedy = engine().generate(greedy_request(msgs, 8));
  ASSERT_EQ(greedy.token_ids.size(), 8u);
  GenerateRequest req;
  req.messages = msgs;
  req.sampling.temperature = 5.0;
  req.sampling.top_k = 0;
  req.sampling.top_p = 1.0;
  req.max_tokens = 8;
  req.ignore_eos = true;
  int off_greedy = 0, unlike_first = 0;
  std::vector<int32_t> first;
  for (uint64_t seed : {1, 2, 3, 42}) {
    req.sampling.seed = seed;
    const GenerateResult a = engine().generate(req), b = engine().generate(req);
    EXPECT_EQ(a.token_ids, b.token_ids) << "seed " << seed;
    EXPECT_EQ(a.token_ids.size(), 8u) << "seed " << seed;
    off_greedy += a.token_ids != greedy.token_ids;
    if (first.empty()) first = a.token_ids;
    unlike_first += a.token_ids != first;
  }
  EXPECT_GT(off_greedy, 0) << "every seed gave the greedy tokens";
  EXPECT_GT(unlike_first, 0) << "every seed gave the same tokens";
}

TEST(Engine, GenerationConfigDefaultsApplyWhenUnset) {
  // The fixture's generation_config: do_sample, temperature 0.7, top_k 20, top_p 0.8.
  SamplerConfig d = engine().sampler_config({});
  EXPECT_DOUBLE_EQ(d.temperature, 0.7);
  EXPECT_EQ(d.top_k, 20);
  EXPECT_DOUBLE_EQ(d.top_p, 0.8);
  SamplingParams s;
  s.top_k = 5;
  SamplerConfig u = engine().sampler_config(s);
  EXPECT_EQ(u.top_k, 5);
  EXPECT_DOUBLE_EQ(u.temperature, 0.7);
  s.temperature = 0;
  EXPECT_TRUE(engine().sampler_config(s).greedy());
  s.seed = 9;
  EXPECT_EQ(engine().sampler_config(s).seed, 9u);
}

// The fixture's preprocessor_config: 65536 to 16777216 pixels, 16-pixel
// patches merged 2x2, so an image token covers 32x32 pixels.
TEST(EngineInfo, ResolvesThePolicyOnce) {
  const EngineInfo& info = engine().info();
  EXPECT_EQ(info.min_pixels, 65536);
  EXPECT_EQ(info.max_pixels, 16777216);
  EXPECT_EQ(info.patch_size, 16);
  EXPECT_EQ(info.merge_size, 2);
  EXPECT_EQ(info.slots, 1);
  EXPECT_EQ(info.slot_ctx, 1024);
  EXPECT_EQ(info.kv_type, KvType::F32);  // bf16 weights: exact K/V
  EXPECT_EQ(info.weights, WeightFormat::BF16);
  EXPECT_GT(info.vocab_size, 0);
  EXPECT_GT(info.default_max_tokens, 0);
  EXPECT_LE(info.default_max_tokens, info.slot_ctx);

  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.threads = 1;
  p.ctx_size = 512;
  p.slots = 2;
  p.weights = WeightFormat::Q8;
  p.pixel_cap = 1 << 20;          // qvl serve's --max-image-pixels
  p.min_pixels = int64_t{2} << 20;  // above the cap: the floor follows it down
  p.default_max_tokens = 77;
  auto other = Engine::create(p);
  const EngineInfo& o = other->info();
  EXPECT_EQ(o.max_pixels, 1 << 20);
  EXPECT_EQ(o.min_pixels, 1 << 20);
  EXPECT_EQ(o.slot_ctx, 256);
  EXPECT_EQ(o.kv_type, KvType::F16);  // q8 weights: f16 K/V unless asked
  EXPECT_EQ(o.default_max_tokens, 77);
  EXPECT_EQ(other->generate(greedy_request({{"user", {{"hi", nullptr}}, {}}}, 0)).completion_tokens, 77);
}

// Unset, the one rule (model/default_weights.h) starts an FP8 checkpoint at
// q8 (its weights are dequantized anyway), a bf16 one at bf16; a format
// asked for wins.
TEST(EngineInfo, Fp8CheckpointLoadsAsQ8UnlessAsked) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl-fp8";
  p.threads = 1;
  p.ctx_size = 256;
  auto fp8 = Engine::create(p);
  EXPECT_EQ(fp8->info().weights, WeightFormat::Q8);
  EXPECT_EQ(fp8->info().kv_type, KvType::F16);  // follows the resolved q8
  EXPECT_EQ(fp8->generate(greedy_request({{"user", {{"hi", nullptr}}, {}}}, 3)).completion_tokens, 3);
  p.weights = WeightFormat::F32;
  EXPECT_EQ(Engine::create(p)->info().weights, WeightFormat::F32);
  p.weights.reset();
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  EXPECT_EQ(Engine::create(p)->info().weights, WeightFormat::BF16);
}

std::shared_ptr<const Image> gray(int width, int height) {
  auto img = std::make_shared<Image>();
  img->width = width;
  img->height = height;
  img->rgb.assign(static_cast<size_t>(width) * height * 3, 128);
  return img;
}

GenerateRequest one_image(std::shared_ptr<const Image> img, int64_t min_pixels, int64_t max_pixels) {
  GenerateRequest r;
  r.messages = {{"user", {{"", std::move(img)}, {"describe", nullptr}}, {}}};
  r.min_pixels = min_pixels;
  r.max_pixels = max_pixels;
  return r;
}

// A request narrows the engine's pixel range; asking for more than the
// engine allows gets the engine's bound, and the tokens follow smart_resize.
TEST(Engine, PerRequestPixelRangeIsClampedIntoTheEngines) {
  const auto img = gray(1024, 768);  // 786432 pixels: 32x24 tokens at the engine's range
  EXPECT_EQ(engine().prompt_size(one_image(img, 0, 0)).image_tokens, 32 * 24);
  // At most 512x384 pixels' worth: 16x12 tokens.
  EXPECT_EQ(engine().prompt_size(one_image(img, 0, 512 * 384)).image_tokens, 16 * 12);
  // Beyond the engine's ceiling: the ceiling, i.e. the image as it is.
  EXPECT_EQ(engine().prompt_size(one_image(img, 0, int64_t{1} << 40)).image_tokens, 32 * 24);
  // Below the engine's floor: the floor, 65536 pixels, which this aspect
  // ratio fills as 288x192 (smart_resize rounds each side down to 32).
  EXPECT_EQ(engine().prompt_size(one_image(img, 0, 1000)).image_tokens, 9 * 6);
  // A small image scaled up to a request's min_pixels.
  const auto small = gray(64, 64);
  EXPECT_EQ(engine().prompt_size(one_image(small, 0, 0)).image_tokens, 64);
  EXPECT_EQ(engine().prompt_size(one_image(small, 512 * 512, 0)).image_tokens, 16 * 16);

  // The run computes what was counted, and the answer depends on the range.
  engine().reset();
  GenerateRequest narrow = one_image(img, 0, 512 * 384);
  narrow.sampling.temperature = 0;
  narrow.max_tokens = 2;
  const GenerateResult r = engine().generate(narrow);
  EXPECT_EQ(r.prompt_tokens, engine().prompt_size(narrow).tokens);

  GenerateRequest bad = one_image(img, -1, 0);
  EXPECT_THROW(engine().validate(bad), FieldError);
}

TEST(Engine, PromptLargerThanContextNamesTheNumbers) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.threads = 1;
  p.ctx_size = 32;
  auto small = Engine::create(p);
  try {
    small->generate(greedy_request(messages_of(prompt_case("image_question")), 4));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("96"), std::string::npos) << msg;
    EXPECT_NE(msg.find("32"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace qvl
