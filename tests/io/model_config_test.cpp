// Model folder parsing: config.json in both transformers dialects, the
// preprocessor and generation configs, the chat template's three homes, and a
// clear one-line error for each kind of bad input.
#include "io/model_config.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

using json = nlohmann::json;
using test::expect_error;
using test::TempDir;
using test::write_bytes;
namespace fs = std::filesystem;

const std::string kTiny = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";

json fixture_json(const std::string& name) { return json::parse(read_file(kTiny + "/" + name)); }

// A config rewritten in the transformers 5 dialect (the fixture's by default).
json v5_config(json c = fixture_json("config.json")) {
  json& t = c["text_config"];
  json rope = t["rope_scaling"];
  rope["rope_theta"] = t["rope_theta"];
  t.erase("rope_scaling");
  t.erase("rope_theta");
  t["rope_parameters"] = rope;
  return c;
}

TEST(ModelConfig, FixtureTransformers457) {
  ModelConfig c = parse_model_config(read_file(kTiny + "/config.json"), "config.json");
  EXPECT_EQ(c.model_type, "qwen3_vl");
  EXPECT_EQ(c.dialect, "transformers 4.57");
  ASSERT_EQ(c.architectures.size(), 1u);
  EXPECT_EQ(c.architectures[0], "Qwen3VLForConditionalGeneration");
  EXPECT_EQ(c.text.hidden_size, 64);
  EXPECT_EQ(c.text.intermediate_size, 192);
  EXPECT_EQ(c.text.num_hidden_layers, 4);
  EXPECT_EQ(c.text.num_attention_heads, 4);
  EXPECT_EQ(c.text.num_key_value_heads, 2);
  EXPECT_EQ(c.text.head_dim, 32);
  EXPECT_EQ(c.text.vocab_size, 151936);
  EXPECT_EQ(c.text.max_position_embeddings, 262144);
  EXPECT_DOUBLE_EQ(c.text.rope_theta, 5e6);
  EXPECT_EQ(c.text.mrope_section, (std::vector<int>{8, 4, 4}));
  EXPECT_TRUE(c.text.mrope_interleaved);
  EXPECT_DOUBLE_EQ(c.text.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.text.hidden_act, "silu");
  EXPECT_FALSE(c.text.attention_bias);
  EXPECT_EQ(c.vision.depth, 6);
  EXPECT_EQ(c.vision.hidden_size, 96);
  EXPECT_EQ(c.vision.intermediate_size, 192);
  EXPECT_EQ(c.vision.num_heads, 4);
  EXPECT_EQ(c.vision.head_dim(), 24);
  EXPECT_EQ(c.vision.patch_size, 16);
  EXPECT_EQ(c.vision.spatial_merge_size, 2);
  EXPECT_EQ(c.vision.temporal_patch_size, 2);
  EXPECT_EQ(c.vision.out_hidden_size, 64);
  EXPECT_EQ(c.vision.num_position_embeddings, 64);
  EXPECT_EQ(c.vision.grid_per_side(), 8);
  EXPECT_EQ(c.vision.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(c.vision.deepstack_visual_indexes, (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(c.image_token_id, 151655);
  EXPECT_EQ(c.video_token_id, 151656);
  EXPECT_EQ(c.vision_start_token_id, 151652);
  EXPECT_EQ(c.vision_end_token_id, 151653);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{151645}));
}

TEST(ModelConfig, Transformers5DialectParsesTheSame) {
  ModelConfig a = parse_model_config(read_file(kTiny + "/config.json"), "a");
  ModelConfig b = parse_model_config(v5_config().dump(), "b");
  EXPECT_EQ(b.dialect, "transformers 5");
  EXPECT_DOUBLE_EQ(b.text.rope_theta, a.text.rope_theta);
  EXPECT_EQ(b.text.mrope_section, a.text.mrope_section);
  EXPECT_EQ(b.text.mrope_interleaved, a.text.mrope_interleaved);
  EXPECT_EQ(b.text.head_dim, a.text.head_dim);

  // Different values really come from rope_parameters.
  json c = v5_config();
  c["text_config"]["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}, {"mrope_section", {4, 6, 6}},
                                         {"mrope_interleaved", false}};
  ModelConfig d = parse_model_config(c.dump(), "d");
  EXPECT_DOUBLE_EQ(d.text.rope_theta, 1e6);
  EXPECT_EQ(d.text.mrope_section, (std::vector<int>{4, 6, 6}));
  EXPECT_FALSE(d.text.mrope_interleaved);

  // Parameters keyed by attention type.
  json e = v5_config();
  json inner = e["text_config"]["rope_parameters"];
  e["text_config"]["rope_parameters"] = {{"full_attention", inner}};
  EXPECT_EQ(parse_model_config(e.dump(), "e").text.mrope_section, (std::vector<int>{8, 4, 4}));
}

TEST(ModelConfig, DefaultsAndTying) {
  json c = fixture_json("config.json");
  // No head_dim: hidden / heads = 16, so the sections must sum to 8.
  c["text_config"].erase("head_dim");
  c["text_config"]["rope_scaling"]["mrope_section"] = {4, 2, 2};
  c["text_config"].erase("num_key_value_heads");
  c["text_config"]["tie_word_embeddings"] = false;  // the text config decides (transformers 4.57)
  ModelConfig m = parse_model_config(c.dump(), "c");
  EXPECT_EQ(m.text.head_dim, 16);
  EXPECT_EQ(m.text.num_key_value_heads, 4);
  EXPECT_FALSE(m.tie_word_embeddings);
  c["text_config"].erase("tie_word_embeddings");
  EXPECT_TRUE(parse_model_config(c.dump(), "c").tie_word_embeddings);  // then the top level
  c["text_config"]["head_dim"] = nullptr;  // null means "default" too
  EXPECT_EQ(parse_model_config(c.dump(), "c").text.head_dim, 16);
}

struct BadConfig {
  const char* what;
  std::function<void(json&)> edit;
  std::vector<std::string> needles;
};

TEST(ModelConfig, ErrorsNameFileAndField) {
  const std::vector<BadConfig> cases = {
      {"missing field", [](json& c) { c["text_config"].erase("hidden_size"); }, {"text_config.hidden_size", "missing"}},
      {"wrong type", [](json& c) { c["text_config"]["hidden_size"] = "64"; },
       {"text_config.hidden_size", "must be an integer", "\"64\""}},
      {"fractional", [](json& c) { c["vision_config"]["depth"] = 6.5; }, {"vision_config.depth", "integer"}},
      {"negative", [](json& c) { c["text_config"]["intermediate_size"] = -1; },
       {"text_config.intermediate_size", "positive"}},
      {"qwen2.5-vl", [](json& c) { c["model_type"] = "qwen2_5_vl"; }, {"model_type", "qwen2_5_vl", "not support"}},
      {"other moe", [](json& c) { c["model_type"] = "qwen3_moe"; }, {"model_type", "qwen3_moe", "not support"}},
      {"no model_type", [](json& c) { c.erase("model_type"); }, {"model_type", "missing"}},
      {"no text_config", [](json& c) { c.erase("text_config"); }, {"text_config", "missing"}},
      {"text_config not object", [](json& c) { c["text_config"] = 5; }, {"text_config", "must be an object"}},
      {"no vision_config", [](json& c) { c.erase("vision_config"); }, {"vision_config", "missing"}},
      {"mrope sum", [](json& c) { c["text_config"]["rope_scaling"]["mrope_section"] = {8, 4, 3}; },
       {"mrope_section", "sums to 15", "head_dim / 2 = 16"}},
      {"mrope size", [](json& c) { c["text_config"]["rope_scaling"]["mrope_section"] = {8, 8}; },
       {"mrope_section", "3 entries"}},
      {"mrope type", [](json& c) { c["text_config"]["rope_scaling"]["mrope_section"] = "8,4,4"; },
       {"text_config.rope_scaling.mrope_section", "list of integers"}},
      {"no rope", [](json& c) { c["text_config"].erase("rope_scaling"); }, {"rope_parameters", "rope_scaling", "missing"}},
      {"no theta", [](json& c) { c["text_config"].erase("rope_theta"); }, {"text_config.rope_theta", "missing"}},
      {"rope type", [](json& c) { c["text_config"]["rope_scaling"]["rope_type"] = "yarn"; }, {"rope_type", "yarn"}},
      {"kv heads", [](json& c) { c["text_config"]["num_key_value_heads"] = 3; },
       {"text_config.num_key_value_heads", "(3)", "divide", "(4)"}},
      {"heads do not divide hidden",
       [](json& c) {
         c["text_config"].erase("head_dim");
         c["text_config"]["num_attention_heads"] = 6;
         c["text_config"]["num_key_value_heads"] = 6;
       },
       {"text_config.head_dim", "hidden_size (64)", "num_attention_heads (6)"}},
      {"text act", [](json& c) { c["text_config"]["hidden_act"] = "gelu"; }, {"text_config.hidden_act", "silu"}},
      {"vision heads", [](json& c) { c["vision_config"]["num_heads"] = 5; },
       {"vision_config.hidden_size", "(96)", "num_heads (5)"}},
      {"vision act", [](json& c) { c["vision_config"]["hidden_act"] = "relu"; }, {"vision_config.hidden_act", "relu"}},
      {"deepstack range", [](json& c) { c["vision_config"]["deepstack_visual_indexes"] = {1, 3, 6}; },
       {"vision_config.deepstack_visual_indexes[2]", "(6)", "depth = 6"}},
      {"deepstack negative", [](json& c) { c["vision_config"]["deepstack_visual_indexes"] = {-1}; },
       {"deepstack_visual_indexes[0]"}},
      {"deepstack repeat", [](json& c) { c["vision_config"]["deepstack_visual_indexes"] = {1, 1}; },
       {"deepstack_visual_indexes", "repeats"}},
      {"deepstack too many", [](json& c) { c["vision_config"]["deepstack_visual_indexes"] = {0, 1, 2, 3, 4}; },
       {"deepstack_visual_indexes", "5 entries", "4 layers"}},
      {"deepstack type", [](json& c) { c["vision_config"]["deepstack_visual_indexes"] = {"1"}; },
       {"deepstack_visual_indexes[0]", "integer"}},
      {"pos grid", [](json& c) { c["vision_config"]["num_position_embeddings"] = 60; },
       {"vision_config.num_position_embeddings", "(60)", "square"}},
      {"out hidden", [](json& c) { c["vision_config"]["out_hidden_size"] = 32; },
       {"vision_config.out_hidden_size", "(32)", "text_config.hidden_size (64)"}},
      {"token id", [](json& c) { c["image_token_id"] = 200000; }, {"image_token_id", "200000", "vocabulary"}},
      {"tie type", [](json& c) { c["text_config"]["tie_word_embeddings"] = "yes"; },
       {"text_config.tie_word_embeddings", "true or false"}},
      {"not object", [](json& c) { c = json::array({1}); }, {"top level", "object"}},
  };
  for (const BadConfig& b : cases) {
    SCOPED_TRACE(b.what);
    json c = fixture_json("config.json");
    b.edit(c);
    std::vector<std::string> needles = b.needles;
    needles.push_back("/x/config.json: ");
    expect_error([&] { parse_model_config(c.dump(), "/x/config.json"); }, needles);
  }
  expect_error([] { parse_model_config("{\"model_type\": ", "/x/config.json"); }, {"/x/config.json", "not valid JSON"});
  // The same checks in the transformers 5 dialect name rope_parameters.
  json c = v5_config();
  c["text_config"]["rope_parameters"]["mrope_section"] = {8, 8, 8};
  expect_error([&] { parse_model_config(c.dump(), "config.json"); }, {"rope_parameters.mrope_section", "sums to 24"});
  c = v5_config();
  c["text_config"]["rope_parameters"].erase("rope_theta");
  expect_error([&] { parse_model_config(c.dump(), "config.json"); }, {"rope_theta", "missing"});
}

const std::string kTinyMoe = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-moe";

// The mixture-of-experts checkpoint's config as published (Qwen3-VL-30B-A3B's
// field names): every layer sparse.
TEST(ModelConfig, MixtureOfExpertsFixture) {
  ModelConfig c = parse_model_config(read_file(kTinyMoe + "/config.json"), "config.json");
  EXPECT_EQ(c.model_type, "qwen3_vl_moe");
  EXPECT_EQ(c.text.num_experts, 8);
  EXPECT_EQ(c.text.num_experts_per_tok, 2);
  EXPECT_EQ(c.text.moe_intermediate_size, 32);
  EXPECT_TRUE(c.text.norm_topk_prob);
  EXPECT_EQ(c.text.decoder_sparse_step, 1);
  EXPECT_TRUE(c.text.mlp_only_layers.empty());
  EXPECT_FALSE(c.tie_word_embeddings);
  for (int i = 0; i < c.text.num_hidden_layers; ++i) EXPECT_TRUE(c.text.sparse_layer(i)) << i;
  // A dense config has no experts.
  ModelConfig dense = parse_model_config(read_file(kTiny + "/config.json"), "config.json");
  EXPECT_EQ(dense.text.num_experts, 0);
  EXPECT_FALSE(dense.text.sparse_layer(0));
}

// transformers' rule: dense when listed in mlp_only_layers or off the
// decoder_sparse_step grid.
TEST(ModelConfig, SparseLayersFollowStepAndList) {
  json c = json::parse(read_file(kTinyMoe + "/config.json"));
  c["text_config"]["decoder_sparse_step"] = 2;
  c["text_config"]["mlp_only_layers"] = {3};
  ModelConfig m = parse_model_config(c.dump(), "config.json");
  EXPECT_FALSE(m.text.sparse_layer(0));
  EXPECT_TRUE(m.text.sparse_layer(1));
  EXPECT_FALSE(m.text.sparse_layer(2));
  EXPECT_FALSE(m.text.sparse_layer(3));
  // The transformers 5 dialect keeps the same fields in text_config.
  ModelConfig v5 = parse_model_config(v5_config(c).dump(), "config.json");
  EXPECT_EQ(v5.dialect, "transformers 5");
  EXPECT_EQ(v5.text.num_experts, 8);
  EXPECT_TRUE(v5.text.sparse_layer(1));
}

TEST(ModelConfig, MixtureOfExpertsErrorsNameTheField) {
  const std::vector<BadConfig> cases = {
      {"no experts", [](json& c) { c["text_config"]["num_experts"] = 0; }, {"text_config.num_experts", "positive"}},
      {"top-k too large",
       [](json& c) { c["text_config"]["num_experts_per_tok"] = 9; },
       {"text_config.num_experts_per_tok", "(9)", "num_experts = 8"}},
      {"top-k zero", [](json& c) { c["text_config"]["num_experts_per_tok"] = 0; }, {"num_experts_per_tok", "(0)"}},
      {"width",
       [](json& c) { c["text_config"]["moe_intermediate_size"] = -3; },
       {"text_config.moe_intermediate_size", "positive"}},
      {"step",
       [](json& c) { c["text_config"]["decoder_sparse_step"] = 0; },
       {"text_config.decoder_sparse_step", "positive"}},
      {"dense layer",
       [](json& c) {
         c["text_config"]["mlp_only_layers"] = {0, 4};
       },
       {"text_config.mlp_only_layers[1]", "(4)", "num_hidden_layers = 4"}},
      {"norm type",
       [](json& c) { c["text_config"]["norm_topk_prob"] = 1; },
       {"text_config.norm_topk_prob", "true or false"}},
  };
  for (const BadConfig& b : cases) {
    SCOPED_TRACE(b.what);
    json c = json::parse(read_file(kTinyMoe + "/config.json"));
    b.edit(c);
    std::vector<std::string> needles = b.needles;
    needles.push_back("/x/config.json: ");
    expect_error([&] { parse_model_config(c.dump(), "/x/config.json"); }, needles);
  }
}

// Each value the model's math cannot run is refused when config.json is read,
// in one line that names the file and the field as the file spells it.
TEST(ModelConfig, ValidationNamesTheField) {
  auto message = [](const json& c) {
    return expect_error([&] { parse_model_config(c.dump(), "/m/config.json"); }, {"/m/config.json: field "});
  };
  json c = fixture_json("config.json");
  c["text_config"]["num_key_value_heads"] = 3;
  EXPECT_EQ(message(c),
            "/m/config.json: field text_config.num_key_value_heads (3) must divide num_attention_heads (4)");

  const std::vector<BadConfig> cases = {
      {"no layers",
       [](json& c) { c["text_config"]["num_hidden_layers"] = 0; },
       {"text_config.num_hidden_layers", "must be positive (got 0)"}},
      {"no vocabulary", [](json& c) { c["text_config"]["vocab_size"] = 0; }, {"text_config.vocab_size", "positive"}},
      {"head_dim zero", [](json& c) { c["text_config"]["head_dim"] = 0; }, {"text_config.head_dim", "(got 0)"}},
      {"odd head_dim", [](json& c) { c["text_config"]["head_dim"] = 31; }, {"text_config.head_dim", "(31)", "even"}},
      {"rms eps", [](json& c) { c["text_config"]["rms_norm_eps"] = 0; }, {"text_config.rms_norm_eps", "positive"}},
      {"theta", [](json& c) { c["text_config"]["rope_theta"] = -1; }, {"text_config.rope_theta", "positive"}},
      {"mrope negative",
       [](json& c) {
         c["text_config"]["rope_scaling"]["mrope_section"] = {20, -2, -2};
       },
       {"text_config.rope_scaling.mrope_section", "negative entry (-2)"}},
      {"older rope type key",
       [](json& c) {
         c["text_config"]["rope_scaling"] = {{"type", "yarn"}, {"mrope_section", {8, 4, 4}}};
       },
       {"text_config.rope_scaling.type", "yarn"}},
      {"vision depth", [](json& c) { c["vision_config"]["depth"] = 0; }, {"vision_config.depth", "positive"}},
      {"patch",
       [](json& c) { c["vision_config"]["patch_size"] = 0; },
       {"vision_config.patch_size", "positive (got 0)"}},
      {"merge",
       [](json& c) { c["vision_config"]["spatial_merge_size"] = -2; },
       {"vision_config.spatial_merge_size", "positive (got -2)"}},
      {"temporal",
       [](json& c) { c["vision_config"]["temporal_patch_size"] = 0; },
       {"vision_config.temporal_patch_size", "positive"}},
      {"channels", [](json& c) { c["vision_config"]["in_channels"] = 0; }, {"vision_config.in_channels", "positive"}},
      {"vision rotary",
       [](json& c) { c["vision_config"]["num_heads"] = 16; },
       {"vision_config.num_heads", "head dim 6", "multiple of 4"}},
      // The defaults of absent token ids must fit the vocabulary as well.
      {"default token id",
       [](json& c) {
         c.erase("image_token_id");
         c["text_config"]["vocab_size"] = 151655;
       },
       {"image_token_id", "(151655)", "vocabulary [0, 151655)"}},
  };
  for (const BadConfig& b : cases) {
    SCOPED_TRACE(b.what);
    json bad = fixture_json("config.json");
    b.edit(bad);
    std::vector<std::string> needles = b.needles;
    needles.push_back("/m/config.json: field ");
    expect_error([&] { parse_model_config(bad.dump(), "/m/config.json"); }, needles);
  }

  // In the transformers 5 dialect the rotary fields are under rope_parameters,
  // or under rope_parameters.full_attention.
  c = v5_config();
  c["text_config"]["rope_parameters"]["rope_theta"] = 0;
  EXPECT_NE(message(c).find("field text_config.rope_parameters.rope_theta must be positive"), std::string::npos);
  c = v5_config();
  c["text_config"]["rope_parameters"]["mrope_section"] = {8, 4, 3};
  c["text_config"]["rope_parameters"] = {{"full_attention", c["text_config"]["rope_parameters"]}};
  EXPECT_NE(message(c).find("field text_config.rope_parameters.full_attention.mrope_section sums to 15"),
            std::string::npos);
}

// What the math can run is not refused: other dimensions (grouped-query
// attention down to one key/value head, a head_dim that is not
// hidden_size / heads, no DeepStack) and the tanh GELU under its other names.
TEST(ModelConfig, OtherDimensionsAreAccepted) {
  json c = fixture_json("config.json");
  json& t = c["text_config"];
  t["hidden_size"] = 48;
  t["num_attention_heads"] = 6;
  t["num_key_value_heads"] = 1;
  t["head_dim"] = 12;
  t["num_hidden_layers"] = 1;
  t["rope_scaling"]["mrope_section"] = {2, 2, 2};
  json& v = c["vision_config"];
  v["hidden_size"] = 40;
  v["num_heads"] = 5;
  v["depth"] = 1;
  v["out_hidden_size"] = 48;
  v["num_position_embeddings"] = 1;
  v["deepstack_visual_indexes"] = json::array();
  ModelConfig m = parse_model_config(c.dump(), "config.json");
  EXPECT_EQ(m.text.head_dim, 12);
  EXPECT_EQ(m.vision.head_dim(), 8);
  EXPECT_TRUE(m.vision.deepstack_visual_indexes.empty());
  for (const char* act : {"gelu_new", "gelu_fast", "gelu"}) {
    v["hidden_act"] = act;
    EXPECT_EQ(parse_model_config(c.dump(), "config.json").vision.hidden_act, act);
  }
}

TEST(PreprocessorConfig, FixtureAndVariants) {
  PreprocessorConfig p = parse_preprocessor_config(read_file(kTiny + "/preprocessor_config.json"), "p");
  EXPECT_EQ(p.patch_size, 16);
  EXPECT_EQ(p.temporal_patch_size, 2);
  EXPECT_EQ(p.merge_size, 2);
  EXPECT_EQ(p.factor(), 32);
  EXPECT_EQ(p.min_pixels, 65536);
  EXPECT_EQ(p.max_pixels, 16777216);
  EXPECT_FLOAT_EQ(p.image_mean[1], 0.5f);
  EXPECT_FLOAT_EQ(p.image_std[2], 0.5f);
  EXPECT_DOUBLE_EQ(p.rescale_factor, 1.0 / 255.0);
  EXPECT_TRUE(p.do_resize && p.do_rescale && p.do_normalize && p.do_convert_rgb);

  json j = fixture_json("preprocessor_config.json");
  j["min_pixels"] = 3136;  // top-level keys override size
  j["max_pixels"] = 1003520;
  j["do_normalize"] = false;
  j["rescale_factor"] = 0.5;
  p = parse_preprocessor_config(j.dump(), "p");
  EXPECT_EQ(p.min_pixels, 3136);
  EXPECT_EQ(p.max_pixels, 1003520);
  EXPECT_FALSE(p.do_normalize);
  EXPECT_DOUBLE_EQ(p.rescale_factor, 0.5);

  json old = {{"size", {{"min_pixels", 100}, {"max_pixels", 200}}}};  // older size keys
  p = parse_preprocessor_config(old.dump(), "p");
  EXPECT_EQ(p.min_pixels, 100);
  EXPECT_EQ(p.max_pixels, 200);
  EXPECT_FLOAT_EQ(p.image_mean[0], 0.48145466f);  // CLIP statistics when absent
  EXPECT_FLOAT_EQ(p.image_std[0], 0.26862954f);
}

TEST(PreprocessorConfig, Errors) {
  auto bad = [](std::function<void(json&)> edit, std::vector<std::string> needles) {
    json j = fixture_json("preprocessor_config.json");
    edit(j);
    needles.push_back("/m/preprocessor_config.json: ");
    expect_error([&] { parse_preprocessor_config(j.dump(), "/m/preprocessor_config.json"); }, needles);
  };
  bad([](json& j) { j.erase("size"); }, {"size.shortest_edge", "missing"});
  bad([](json& j) { j["size"].erase("longest_edge"); }, {"size.longest_edge", "missing"});
  bad([](json& j) { j["size"]["shortest_edge"] = "big"; }, {"size.shortest_edge", "integer"});
  bad([](json& j) { j["size"]["shortest_edge"] = 0; }, {"shortest_edge", "positive"});
  bad([](json& j) { j["max_pixels"] = 10; }, {"max_pixels", "(10)", "minimum (65536)"});
  bad([](json& j) { j["image_mean"] = {0.5, 0.5}; }, {"image_mean", "3 entries"});
  bad([](json& j) { j["image_std"] = {0.5, 0, 0.5}; }, {"image_std", "positive"});
  bad([](json& j) { j["patch_size"] = 0; }, {"patch_size", "positive"});
  bad([](json& j) { j["do_resize"] = 1; }, {"do_resize", "true or false"});
  expect_error([] { parse_preprocessor_config("nope", "pp.json"); }, {"pp.json", "not valid JSON"});
}

TEST(GenerationConfig, FixtureAndVariants) {
  GenerationConfig g = parse_generation_config(read_file(kTiny + "/generation_config.json"), "g");
  EXPECT_EQ(g.eos_token_ids, (std::vector<int>{151645, 151643}));
  EXPECT_EQ(g.bos_token_id, 151643);
  EXPECT_EQ(g.pad_token_id, 151643);
  EXPECT_EQ(g.do_sample, true);
  EXPECT_EQ(g.top_k, 20);
  EXPECT_DOUBLE_EQ(*g.top_p, 0.8);
  EXPECT_DOUBLE_EQ(*g.temperature, 0.7);
  EXPECT_DOUBLE_EQ(*g.repetition_penalty, 1.0);
  EXPECT_FALSE(g.min_p.has_value());
  EXPECT_FALSE(g.max_new_tokens.has_value());

  g = parse_generation_config(R"({"eos_token_id": 7, "max_new_tokens": 12})", "g");
  EXPECT_EQ(g.eos_token_ids, (std::vector<int>{7}));
  EXPECT_EQ(g.max_new_tokens, 12);
  EXPECT_FALSE(g.temperature.has_value());

  expect_error([] { parse_generation_config(R"({"eos_token_id": "x"})", "/m/generation_config.json"); },
               {"/m/generation_config.json", "eos_token_id", "integer"});
  expect_error([] { parse_generation_config(R"({"top_p": 2})", "gen.json"); }, {"gen.json", "top_p"});
  expect_error([] { parse_generation_config(R"({"temperature": -1})", "gen.json"); }, {"gen.json", "temperature"});
  expect_error([] { parse_generation_config(R"({"top_k": "20"})", "gen.json"); }, {"gen.json", "top_k", "integer"});
}

// A copy of the fixture folder (big files linked, not copied) to mutate.
class FolderCopy {
 public:
  FolderCopy() {
    for (const auto& e : fs::directory_iterator(kTiny)) {
      fs::path to = fs::path(dir_.path()) / e.path().filename();
      if (fs::file_size(e.path()) > (1 << 20))
        fs::create_symlink(e.path(), to);
      else
        fs::copy_file(e.path(), to);
    }
  }
  std::string operator/(const std::string& name) const { return dir_ / name; }
  const std::string& path() const { return dir_.path(); }
  void edit(const std::string& name, const std::function<void(json&)>& fn) const {
    json j = json::parse(read_file(dir_ / name));
    fn(j);
    write_bytes(dir_ / name, j.dump(2));
  }

 private:
  TempDir dir_;
};

TEST(ModelFolder, OpensFixture) {
  ModelFolder m = ModelFolder::open(kTiny);
  EXPECT_EQ(m.dir, kTiny);
  EXPECT_EQ(m.config.text.num_hidden_layers, 4);
  EXPECT_EQ(m.preprocessor.min_pixels, 65536);
  EXPECT_EQ(m.generation.eos_token_ids, (std::vector<int>{151645, 151643}));
  EXPECT_NE(m.chat_template.find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(m.chat_template_path, kTiny + "/chat_template.json");
  EXPECT_EQ(m.tokenizer_json, kTiny + "/tokenizer.json");
  EXPECT_EQ(m.weights_path, kTiny + "/model.safetensors");
}

TEST(ModelFolder, ChatTemplateSources) {
  FolderCopy f;
  write_bytes(f / "chat_template.jinja", "{{ jinja }}");
  ModelFolder m = ModelFolder::open(f.path());
  EXPECT_EQ(m.chat_template, "{{ jinja }}");
  EXPECT_EQ(m.chat_template_path, f / "chat_template.jinja");

  fs::remove(f / "chat_template.jinja");
  fs::remove(f / "chat_template.json");
  m = ModelFolder::open(f.path());  // tokenizer_config.json's
  EXPECT_EQ(m.chat_template_path, f / "tokenizer_config.json");
  EXPECT_NE(m.chat_template.find("<|im_start|>"), std::string::npos);

  f.edit("tokenizer_config.json", [](json& j) { j["chat_template"] = {{{"name", "default"}, {"template", "T"}}}; });
  EXPECT_EQ(ModelFolder::open(f.path()).chat_template, "T");
  f.edit("tokenizer_config.json", [](json& j) { j.erase("chat_template"); });
  m = ModelFolder::open(f.path());
  EXPECT_EQ(m.chat_template, "");
  EXPECT_EQ(m.chat_template_path, "");

  write_bytes(f / "chat_template.json", R"({"chat_template": 5})");
  expect_error([&] { ModelFolder::open(f.path()); }, {f / "chat_template.json", "chat_template", "string"});
}

TEST(ModelFolder, Errors) {
  expect_error([] { ModelFolder::open("/nonexistent/model"); }, {"/nonexistent/model", "no such folder"});
  expect_error([] { ModelFolder::open(kTiny + "/config.json"); }, {"config.json", "not a folder"});
  for (const char* name : {"config.json", "preprocessor_config.json", "tokenizer.json"}) {
    FolderCopy f;
    fs::remove(f / name);
    expect_error([&] { ModelFolder::open(f.path()); }, {f / name, "missing"});
  }
  {
    FolderCopy f;
    fs::remove(f / "model.safetensors");
    expect_error([&] { ModelFolder::open(f.path()); }, {f.path(), "no weights"});
  }
  {
    FolderCopy f;
    f.edit("preprocessor_config.json", [](json& j) { j["patch_size"] = 14; });
    expect_error([&] { ModelFolder::open(f.path()); },
                 {f / "preprocessor_config.json", "patch_size (14)", "vision_config.patch_size (16)", f / "config.json"});
  }
  {
    FolderCopy f;
    f.edit("config.json", [](json& j) { j["vision_config"]["spatial_merge_size"] = 1; });
    expect_error([&] { ModelFolder::open(f.path()); }, {"merge_size (2)", "spatial_merge_size (1)"});
  }
  {
    FolderCopy f;
    f.edit("config.json", [](json& j) { j["text_config"]["num_key_value_heads"] = 3; });
    expect_error([&] { ModelFolder::open(f.path()); }, {f / "config.json", "num_key_value_heads"});
  }
  {
    FolderCopy f;  // no generation_config.json: EOS from config.json
    fs::remove(f / "generation_config.json");
    ModelFolder m = ModelFolder::open(f.path());
    EXPECT_EQ(m.generation.eos_token_ids, (std::vector<int>{151645}));
    EXPECT_FALSE(m.generation.temperature.has_value());
  }
  {
    FolderCopy f;
    f.edit("generation_config.json", [](json& j) { j["eos_token_id"] = 999999; });
    expect_error([&] { ModelFolder::open(f.path()); }, {"generation_config.json", "eos_token_id", "999999"});
  }
}

}  // namespace
// video_preprocessor_config.json: the frames' pixel budget (over all frames)
// and the sampling keys; absent keys take Qwen3VLVideoProcessor's defaults.
TEST(VideoPreprocessorConfig, FixtureAndDefaultsAndErrors) {
  const ModelFolder m = ModelFolder::open(std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl");
  EXPECT_EQ(m.video_preprocessor.frames.min_pixels, 4096);
  EXPECT_EQ(m.video_preprocessor.frames.max_pixels, 25165824);
  EXPECT_EQ(m.video_preprocessor.fps, 2.0);
  EXPECT_EQ(m.video_preprocessor.min_frames, 4);
  EXPECT_EQ(m.video_preprocessor.max_frames, 768);
  const VideoPreprocessorConfig v = parse_video_preprocessor_config(
      R"({"size": {"shortest_edge": 8192, "longest_edge": 65536}, "fps": 1.5, "max_frames": 32})", "v.json");
  EXPECT_EQ(v.frames.max_pixels, 65536);
  EXPECT_EQ(v.fps, 1.5);
  EXPECT_EQ(v.min_frames, 4);
  EXPECT_EQ(v.max_frames, 32);
  try {
    parse_video_preprocessor_config(R"({"size": {"shortest_edge": 1, "longest_edge": 2}, "fps": 0})", "v.json");
    FAIL() << "fps 0 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fps"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("v.json"), std::string::npos) << e.what();
  }
}

}  // namespace qvl

namespace qvl {
namespace {

const std::string kFp8 = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-fp8";

TEST(ModelConfig, Fp8QuantizationConfig) {
  const ModelConfig c = parse_model_config(read_file(kFp8 + "/config.json"), "config.json");
  ASSERT_TRUE(c.fp8.has_value());
  EXPECT_EQ(c.fp8->weight_block_size, (std::array<int, 2>{128, 128}));
  EXPECT_EQ(c.fp8->activation_scheme, "dynamic");
  EXPECT_EQ(c.fp8->modules_to_not_convert.size(), 34u);
  EXPECT_EQ(c.fp8->modules_to_not_convert.back(), "model.language_model.embed_tokens");
  EXPECT_FALSE(parse_model_config(read_file(kTiny + "/config.json"), "config.json").fp8.has_value());
}

TEST(ModelConfig, Fp8QuantizationConfigErrorsNameTheField) {
  const json fp8 = json::parse(read_file(kFp8 + "/config.json"));
  struct Bad {
    const char* what;
    std::function<void(json&)> edit;
    std::vector<std::string> needles;
  };
  const std::vector<Bad> cases = {
      {"method", [](json& q) { q["quant_method"] = "awq"; }, {"quantization_config.quant_method", "\"awq\"", "fp8"}},
      {"no method", [](json& q) { q.erase("quant_method"); }, {"quantization_config.quant_method", "missing"}},
      {"fmt", [](json& q) { q["fmt"] = "e5m2"; }, {"quantization_config.fmt", "\"e5m2\"", "e4m3"}},
      {"block", [](json& q) { q["weight_block_size"] = {64, 64}; },
       {"quantization_config.weight_block_size", "[64, 64]", "[128, 128]"}},
      {"no block", [](json& q) { q.erase("weight_block_size"); }, {"quantization_config.weight_block_size", "missing"}},
      {"static", [](json& q) { q["activation_scheme"] = "static"; },
       {"quantization_config.activation_scheme", "\"static\""}},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.what);
    json c = fp8;
    b.edit(c["quantization_config"]);
    std::vector<std::string> needles = b.needles;
    needles.push_back("/x/config.json: ");
    expect_error([&] { parse_model_config(c.dump(), "/x/config.json"); }, needles);
  }
}

}  // namespace
}  // namespace qvl
