// config.json of a Qwen3-VL checkpoint, in the transformers 4.57 dialect
// (text_config.rope_scaling + rope_theta) and the transformers 5 dialect
// (text_config.rope_parameters), checked for internal consistency.
#include "io/model_config.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "io/json_fields.h"
#include "util/error.h"

namespace qvl {

using io_detail::Fields;

int VisionConfig::grid_per_side() const {
  return static_cast<int>(std::lround(std::sqrt(static_cast<double>(num_position_embeddings))));
}

namespace {

void check_model_type(const Fields& top, const std::string& type) {
  if (type == "qwen3_vl") return;
  if (type == "qwen3_vl_moe")
    top.error("model_type", "is \"qwen3_vl_moe\": the Mixture-of-Experts Qwen3-VL models are unsupported (qvl runs the dense \"qwen3_vl\" models)");
  top.error("model_type", cat("is \"", type, "\", which qvl does not support (it runs \"qwen3_vl\": Qwen3-VL dense checkpoints)"));
}

// The rotary settings from either dialect. Returns the dialect's name.
std::string parse_rope(const Fields& text, TextConfig& t) {
  std::string dialect;
  std::optional<Fields> rope;
  if (text.has("rope_parameters")) {
    dialect = "transformers 5";
    rope = text.object("rope_parameters");
    // transformers 5 may key the parameters by attention type.
    if (!rope->has("rope_type") && !rope->has("rope_theta") && rope->has("full_attention"))
      rope = rope->object("full_attention");
  } else if (text.has("rope_scaling")) {
    dialect = "transformers 4.57";
    rope = text.object("rope_scaling");
  } else {
    text.error("rope_parameters",
               "is missing (and so is the transformers 4.57 form, text_config.rope_scaling): no mrope_section");
  }
  const bool theta_inside = rope->has("rope_theta");
  t.rope_theta = theta_inside ? rope->number("rope_theta") : text.number("rope_theta");
  if (!(t.rope_theta > 0)) (theta_inside ? *rope : text).error("rope_theta", "must be positive");
  t.mrope_section = rope->int_list("mrope_section");
  t.mrope_interleaved = rope->boolean("mrope_interleaved", true);
  t.rope_type = rope->has("rope_type") ? rope->string("rope_type") : rope->string("type", "default");
  // "mrope" is the older name of the same plain (unscaled) multimodal rotary.
  if (t.rope_type != "default" && t.rope_type != "mrope")
    rope->error("rope_type", cat("is \"", t.rope_type, "\"; qvl supports only the default (unscaled) rotary embedding"));
  return dialect;
}

TextConfig parse_text(const Fields& text) {
  TextConfig t;
  t.hidden_size = text.integer("hidden_size");
  t.intermediate_size = text.integer("intermediate_size");
  t.num_hidden_layers = text.integer("num_hidden_layers");
  t.num_attention_heads = text.integer("num_attention_heads");
  t.num_key_value_heads = text.integer("num_key_value_heads", t.num_attention_heads);
  t.vocab_size = text.integer("vocab_size");
  // transformers' default when the key is absent (Qwen3VLTextConfig).
  t.max_position_embeddings = text.i64("max_position_embeddings", 128000);
  t.rms_norm_eps = text.number("rms_norm_eps", 1e-6);
  t.hidden_act = text.string("hidden_act", "silu");
  t.attention_bias = text.boolean("attention_bias", false);
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "vocab_size", "max_position_embeddings"})
    if (text.has(key) && text.i64(key) <= 0) text.error(key, cat("must be positive (got ", text.i64(key), ")"));
  if (text.has("head_dim")) {
    t.head_dim = text.integer("head_dim");
    if (t.head_dim <= 0) text.error("head_dim", cat("must be positive (got ", t.head_dim, ")"));
  } else {
    if (t.hidden_size % t.num_attention_heads != 0)
      text.error("hidden_size", cat("(", t.hidden_size, ") is not divisible by num_attention_heads (", t.num_attention_heads,
                                    ") and head_dim is not given"));
    t.head_dim = t.hidden_size / t.num_attention_heads;
  }
  if (!(t.rms_norm_eps > 0)) text.error("rms_norm_eps", "must be positive");
  if (t.hidden_act != "silu") text.error("hidden_act", cat("is \"", t.hidden_act, "\"; Qwen3-VL's text MLP uses \"silu\""));
  return t;
}

void check_text(const Fields& text, const TextConfig& t) {
  if (t.num_attention_heads % t.num_key_value_heads != 0)
    text.error("num_key_value_heads", cat("(", t.num_key_value_heads, ") must divide num_attention_heads (",
                                          t.num_attention_heads, ")"));
  if (t.head_dim % 2 != 0) text.error("head_dim", cat("(", t.head_dim, ") must be even for the rotary embedding"));
  const std::string sec = text.has("rope_parameters") ? "rope_parameters.mrope_section" : "rope_scaling.mrope_section";
  if (t.mrope_section.size() != 3) text.error(sec, cat("must have 3 entries (t, h, w), got ", t.mrope_section.size()));
  for (int s : t.mrope_section)
    if (s < 0) text.error(sec, cat("has a negative entry (", s, ")"));
  int sum = std::accumulate(t.mrope_section.begin(), t.mrope_section.end(), 0);
  if (sum != t.head_dim / 2)
    text.error(sec, cat("sums to ", sum, " but must equal head_dim / 2 = ", t.head_dim / 2));
}

VisionConfig parse_vision(const Fields& vis) {
  VisionConfig v;
  v.depth = vis.integer("depth");
  v.hidden_size = vis.integer("hidden_size");
  v.intermediate_size = vis.integer("intermediate_size");
  v.num_heads = vis.integer("num_heads");
  v.in_channels = vis.integer("in_channels", 3);
  v.patch_size = vis.integer("patch_size");
  v.spatial_merge_size = vis.integer("spatial_merge_size");
  v.temporal_patch_size = vis.integer("temporal_patch_size");
  v.out_hidden_size = vis.integer("out_hidden_size");
  v.num_position_embeddings = vis.integer("num_position_embeddings");
  v.hidden_act = vis.string("hidden_act", "gelu_pytorch_tanh");
  v.deepstack_visual_indexes = vis.int_list("deepstack_visual_indexes");
  for (const char* key : {"depth", "hidden_size", "intermediate_size", "num_heads", "in_channels", "patch_size",
                          "spatial_merge_size", "temporal_patch_size", "out_hidden_size", "num_position_embeddings"})
    if (vis.has(key) && vis.i64(key) <= 0) vis.error(key, cat("must be positive (got ", vis.i64(key), ")"));
  return v;
}

void check_vision(const Fields& vis, const VisionConfig& v, const TextConfig& t) {
  if (v.hidden_size % v.num_heads != 0)
    vis.error("hidden_size", cat("(", v.hidden_size, ") is not divisible by num_heads (", v.num_heads, ")"));
  // The 2-D rotary splits each half of a head between rows and columns.
  if (v.head_dim() % 4 != 0)
    vis.error("num_heads", cat("gives head dim ", v.head_dim(), ", which must be a multiple of 4 for the 2-D rotary"));
  if (v.hidden_act != "gelu_pytorch_tanh" && v.hidden_act != "gelu")
    vis.error("hidden_act", cat("is \"", v.hidden_act, "\"; qvl supports \"gelu_pytorch_tanh\" and \"gelu\""));
  int side = v.grid_per_side();
  if (side * side != v.num_position_embeddings)
    vis.error("num_position_embeddings", cat("(", v.num_position_embeddings, ") must be a perfect square (a square grid)"));
  if (v.out_hidden_size != t.hidden_size)
    vis.error("out_hidden_size", cat("(", v.out_hidden_size, ") must equal text_config.hidden_size (", t.hidden_size, ")"));
  const auto& ds = v.deepstack_visual_indexes;
  for (size_t i = 0; i < ds.size(); ++i) {
    if (ds[i] < 0 || ds[i] >= v.depth)
      vis.error(cat("deepstack_visual_indexes[", i, "]"), cat("(", ds[i], ") must be a vision layer in [0, depth = ", v.depth, ")"));
    if (std::count(ds.begin(), ds.end(), ds[i]) > 1)
      vis.error("deepstack_visual_indexes", cat("repeats layer ", ds[i]));
  }
  // DeepStack feature k is added to text layer k.
  if (static_cast<int>(ds.size()) > t.num_hidden_layers)
    vis.error("deepstack_visual_indexes", cat("has ", ds.size(), " entries but the text model has only ", t.num_hidden_layers, " layers"));
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  auto root = io_detail::parse_json_text(json_text, source);
  Fields top(root, source, "");
  ModelConfig c;
  c.model_type = top.string("model_type");
  check_model_type(top, c.model_type);
  if (top.has("architectures")) c.architectures = top.string_list("architectures");

  Fields text = top.object("text_config");
  Fields vis = top.object("vision_config");
  c.text = parse_text(text);
  c.dialect = parse_rope(text, c.text);
  check_text(text, c.text);
  c.vision = parse_vision(vis);
  check_vision(vis, c.vision, c.text);

  // Defaults are transformers' (Qwen3VLConfig); every published config sets them.
  c.image_token_id = top.integer("image_token_id", 151655);
  c.video_token_id = top.integer("video_token_id", 151656);
  c.vision_start_token_id = top.integer("vision_start_token_id", 151652);
  c.vision_end_token_id = top.integer("vision_end_token_id", 151653);
  for (const char* key : {"image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id"}) {
    int id = top.integer(key, 0);
    if (top.has(key) && (id < 0 || id >= c.text.vocab_size))
      top.error(key, cat("(", id, ") is outside the vocabulary [0, ", c.text.vocab_size, ")"));
  }
  c.tie_word_embeddings = text.has("tie_word_embeddings") ? text.boolean("tie_word_embeddings", false)
                                                          : top.boolean("tie_word_embeddings", false);
  if (text.has("eos_token_id"))
    c.eos_token_ids = text.int_or_list("eos_token_id");
  else if (top.has("eos_token_id"))
    c.eos_token_ids = top.int_or_list("eos_token_id");
  return c;
}

}  // namespace qvl
