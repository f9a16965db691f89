// Binding a checkpoint: untied lm_head, other dimensions (the hidden tests use
// another tiny checkpoint), missing and mis-shaped tensors named in the error;
// and the decoder's consistency: chunked prefill = one batch, KV-cached
// decode = full recompute.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "io/random_model.h"
#include "io/safetensors_writer.h"
#include "model/model.h"
#include "tiny_model.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

// A random checkpoint in the tiny model's layout with config edits applied.
std::string random_model(const std::string& name, const std::function<void(nlohmann::json&)>& edit, bool untied) {
  const std::string dir = ::testing::TempDir() + "qvl_weights_test_" + name;
  nlohmann::json cfg = nlohmann::json::parse(read_file(golden::model_dir() + "/config.json"));
  edit(cfg);
  RandomModelOptions o;
  o.untied = untied;
  o.threads = 1;
  o.seed = 11;
  o.like_dir = golden::model_dir();
  make_random_model(dir, cfg.dump(), o);
  return dir;
}

void other_dims(nlohmann::json& c) {
  auto& t = c["text_config"];
  t["num_hidden_layers"] = 3;
  t["num_attention_heads"] = 4;
  t["num_key_value_heads"] = 1;
  t["head_dim"] = 16;
  t["hidden_size"] = 48;
  t["intermediate_size"] = 80;
  t["rope_theta"] = 1000000;
  t["rope_scaling"]["mrope_section"] = {4, 2, 2};
  t["vocab_size"] = 151936;
  auto& v = c["vision_config"];
  v["depth"] = 3;
  v["hidden_size"] = 64;
  v["num_heads"] = 2;
  v["intermediate_size"] = 96;
  v["out_hidden_size"] = 48;
  v["num_position_embeddings"] = 36;
  v["deepstack_visual_indexes"] = {0, 2};
}

std::vector<float> last_logits(Model& m, TextDecoder& dec, KvCache& cache, const std::vector<int32_t>& ids,
                               const std::vector<Pos3>& pos) {
  dec.forward({ids.data(), pos.data(), static_cast<int64_t>(ids.size())}, cache, golden::pool());
  std::vector<float> l(m.config().text.vocab_size);
  dec.logits(dec.last_hidden(), 1, l.data(), golden::pool());
  return l;
}

TEST(Weights, UntiedLmHeadAndOtherDimensions) {
  const std::string dir = random_model("untied", other_dims, true);
  ModelLoadOptions o;
  auto m = Model::load(dir, o, golden::pool());
  const ModelConfig& c = m->config();
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_TRUE(m->weights().unused.empty());
  EXPECT_NE(m->weights().text.lm_head.data(), static_cast<const void*>(m->weights().text.embed.bf16));
  EXPECT_EQ(m->weights().vision.deepstack.size(), 2u);

  // An image through the vision tower into the decoder, chunked (7 tokens at a
  // time) and in one batch: the same logits.
  const golden::File& f = golden::file("vision_tiny_40x36.safetensors");
  const ImageGrid grid = golden::grids_of(f["image_grid_thw"])[0];
  const VisionInput in{f["pixel_values"].f.data(), grid};
  const VisionFeatures vf = m->vision().encode({&in, 1}, golden::pool());
  ASSERT_EQ(vf.embeds.size(), static_cast<size_t>(grid.tokens(2) * 48));
  for (float x : vf.embeds) ASSERT_TRUE(std::isfinite(x));
  std::vector<int32_t> ids = {151644, 872, 198, 151652};
  ids.insert(ids.end(), grid.tokens(2), c.image_token_id);
  ids.insert(ids.end(), {151653, 3838, 374, 419, 30, 151645, 198});
  const PromptPositions pp = rope_index(ids, {&grid, 1}, c.image_token_id, 2);
  const std::vector<int64_t> rows = image_rows(ids, c.image_token_id);
  auto run = [&](int64_t batch) {
    TextDecoder dec(c.text, m->weights().text, batch);
    KvCache cache = dec.make_cache(256);
    dec.forward({ids.data(), pp.pos.data(), static_cast<int64_t>(ids.size()), rows.data(), &vf}, cache, golden::pool());
    std::vector<float> l(c.text.vocab_size);
    dec.logits(dec.last_hidden(), 1, l.data(), golden::pool());
    return l;
  };
  const std::vector<float> one = run(512), chunked = run(7);
  EXPECT_LT(golden::max_abs_diff(one.data(), chunked.data(), one.size()), 1e-3);
}

TEST(Weights, KvCachedDecodeEqualsFullRecompute) {
  Model& m = golden::tiny(WeightFormat::F32);
  const TextConfig& tc = m.config().text;
  std::vector<int32_t> ids = {151644, 872, 198, 7985, 264, 6386, 38242, 911, 41674, 13, 151645, 198, 151644, 77091, 198};
  std::vector<Pos3> pos;
  for (int64_t i = 0; i < 20; ++i) pos.push_back({i + 3, i + 3, i + 3});  // an arbitrary delta
  TextDecoder a(tc, m.weights().text, 64), b(tc, m.weights().text, 64);
  KvCache ca = a.make_cache(64), cb = b.make_cache(64);
  std::vector<float> inc = last_logits(m, a, ca, ids, pos);
  std::vector<int32_t> all = ids;
  for (int s = 0; s < 4; ++s) {
    const int32_t tok = static_cast<int32_t>(golden::argmax(inc.data(), tc.vocab_size));
    all.push_back(tok);
    const Pos3 p = pos[all.size() - 1];
    a.forward({&tok, &p, 1}, ca, golden::pool());
    a.logits(a.last_hidden(), 1, inc.data(), golden::pool());
  }
  cb.set_size(0);
  const std::vector<float> full = last_logits(m, b, cb, all, pos);
  EXPECT_LT(golden::max_abs_diff(inc.data(), full.data(), full.size()), 0.05);
}

TEST(Weights, ContextOverflowNamesTheNumbers) {
  Model& m = golden::tiny(WeightFormat::BF16);
  TextDecoder dec(m.config().text, m.weights().text, 8);
  KvCache cache = dec.make_cache(4);
  std::vector<int32_t> ids(6, 100);
  std::vector<Pos3> pos(6);
  try {
    dec.forward({ids.data(), pos.data(), 6}, cache, golden::pool());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context size of 4"), std::string::npos) << e.what();
  }
}

TEST(Weights, MisShapedTensorIsNamed) {
  const std::string dir = random_model("misshaped", [](nlohmann::json&) {}, false);
  // Claim a wider MLP than the checkpoint holds.
  nlohmann::json cfg = nlohmann::json::parse(read_file(dir + "/config.json"));
  cfg["text_config"]["intermediate_size"] = 200;
  std::ofstream(dir + "/config.json") << cfg.dump();
  try {
    Model::load(dir, {}, golden::pool());
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("layers.0.mlp.gate_proj.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[192, 64]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[200, 64]"), std::string::npos) << msg;
  }
}

TEST(Weights, MissingTensorsAreNamed) {
  const std::string dir = random_model("missing", [](nlohmann::json&) {}, false);
  const std::string path = dir + "/model.safetensors";
  std::vector<TensorInfo> keep;
  std::vector<std::vector<uint8_t>> data;
  {
    SafeTensors st = SafeTensors::open(path);
    for (const auto& [name, t] : st.tensors()) {
      if (name == "model.language_model.layers.2.self_attn.k_norm.weight") continue;
      keep.push_back({name, t.dtype, t.shape});
      data.emplace_back(t.data, t.data + t.nbytes);
    }
  }
  write_safetensors(path, keep, data);
  try {
    Model::load(dir, {}, golden::pool());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.language_model.layers.2.self_attn.k_norm.weight"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace qvl
