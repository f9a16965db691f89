// config.json of a Qwen3-VL checkpoint, in the transformers 4.57 dialect
// (text_config.rope_scaling + rope_theta) and the transformers 5 dialect
// (text_config.rope_parameters). Parsing reads each field's type; validate()
// then checks every value, and is the only place that does.
#include "io/model_config.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "io/json_fields.h"
#include "util/error.h"

namespace qvl {

using io_detail::Fields;

bool TextConfig::sparse_layer(int i) const {
  const bool dense_listed = std::find(mlp_only_layers.begin(), mlp_only_layers.end(), i) != mlp_only_layers.end();
  return !dense_listed && num_experts > 0 && decoder_sparse_step > 0 && (i + 1) % decoder_sparse_step == 0;
}

int VisionConfig::grid_per_side() const {
  return static_cast<int>(std::lround(std::sqrt(static_cast<double>(num_position_embeddings))));
}

namespace {

void check_model_type(const Fields& top, const std::string& type) {
  if (type == "qwen3_vl" || type == "qwen3_vl_moe") return;
  top.error("model_type", cat("is \"", type, "\", which qvl does not support (it runs Qwen3-VL: \"qwen3_vl\" ",
                              "and the mixture-of-experts \"qwen3_vl_moe\")"));
}

// Where this config.json keeps the fields whose place depends on its dialect,
// so that validate() names them as the file spells them.
struct RopeFields {
  std::string mrope_section;  // "text_config.rope_scaling.mrope_section", "text_config.rope_parameters...."
  std::string rope_theta;     // "text_config.rope_theta" (4.57) or inside the rotary settings
  std::string rope_type;      // "...rope_type" or the older "...type"
};

// The rotary settings from either dialect. Returns the dialect's name.
std::string parse_rope(const Fields& text, TextConfig& t, RopeFields& where) {
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
  const Fields& theta_home = rope->has("rope_theta") ? *rope : text;
  t.rope_theta = theta_home.number("rope_theta");
  t.mrope_section = rope->int_list("mrope_section");
  t.mrope_interleaved = rope->boolean("mrope_interleaved", true);
  const char* type_key = rope->has("rope_type") || !rope->has("type") ? "rope_type" : "type";
  t.rope_type = rope->string(type_key, "default");
  where = {rope->path("mrope_section"), theta_home.path("rope_theta"), rope->path(type_key)};
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
  // Absent: hidden_size / num_attention_heads when that divides evenly, else
  // 0, which validate() reports.
  const bool divides = t.num_attention_heads > 0 && t.hidden_size % t.num_attention_heads == 0;
  t.head_dim = text.integer("head_dim", divides ? t.hidden_size / t.num_attention_heads : 0);
  return t;
}

// The mixture-of-experts fields of a qwen3_vl_moe text_config; the defaults
// are transformers' (Qwen3VLMoeTextConfig). A dense config has none of them.
void parse_moe(const Fields& text, TextConfig& t) {
  t.num_experts = text.integer("num_experts", 60);
  t.num_experts_per_tok = text.integer("num_experts_per_tok", 4);
  t.moe_intermediate_size = text.integer("moe_intermediate_size", 1408);
  t.norm_topk_prob = text.boolean("norm_topk_prob", true);
  t.decoder_sparse_step = text.integer("decoder_sparse_step", 1);
  if (text.has("mlp_only_layers")) t.mlp_only_layers = text.int_list("mlp_only_layers");
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
  return v;
}

// Every check of the config's values, in one place: what the model's math
// needs of them (sizes positive, heads that split the hidden size, rotary
// halves that add up, layers that exist) and what qvl implements (the
// activations, the unscaled rotary). Nothing else is refused, so a checkpoint
// of other dimensions loads; whether its tensors match these values is the
// weight loader's check (model/weights.cpp). `file` names config.json.
void validate(const ModelConfig& c, const std::string& file, const RopeFields& rope) {
  const TextConfig& t = c.text;
  const VisionConfig& v = c.vision;
  auto bad = [&](const std::string& field, const std::string& message) { fail(file, ": field ", field, " ", message); };
  auto positive = [&](const std::string& field, int64_t value) {
    if (value <= 0) bad(field, cat("must be positive (got ", value, ")"));
  };

  // The text decoder.
  positive("text_config.hidden_size", t.hidden_size);
  positive("text_config.intermediate_size", t.intermediate_size);
  positive("text_config.num_hidden_layers", t.num_hidden_layers);
  positive("text_config.num_attention_heads", t.num_attention_heads);
  positive("text_config.num_key_value_heads", t.num_key_value_heads);
  positive("text_config.vocab_size", t.vocab_size);
  positive("text_config.max_position_embeddings", t.max_position_embeddings);
  if (t.head_dim == 0 && t.hidden_size % t.num_attention_heads != 0)
    bad("text_config.head_dim",
        cat("is missing or 0, and hidden_size (", t.hidden_size, ") is not divisible by num_attention_heads (",
            t.num_attention_heads, ") to give it"));
  positive("text_config.head_dim", t.head_dim);
  if (!(t.rms_norm_eps > 0)) bad("text_config.rms_norm_eps", "must be positive");
  if (t.hidden_act != "silu")
    bad("text_config.hidden_act", cat("is \"", t.hidden_act, "\"; Qwen3-VL's text MLP uses \"silu\""));
  // Grouped-query attention: each key/value head serves a whole group of query heads.
  if (t.num_attention_heads % t.num_key_value_heads != 0)
    bad("text_config.num_key_value_heads",
        cat("(", t.num_key_value_heads, ") must divide num_attention_heads (", t.num_attention_heads, ")"));

  // The mixture of experts: each sparse layer picks num_experts_per_tok of
  // its num_experts experts for every token.
  if (c.model_type == "qwen3_vl_moe") {
    positive("text_config.num_experts", t.num_experts);
    positive("text_config.moe_intermediate_size", t.moe_intermediate_size);
    positive("text_config.decoder_sparse_step", t.decoder_sparse_step);
    if (t.num_experts_per_tok < 1 || t.num_experts_per_tok > t.num_experts)
      bad("text_config.num_experts_per_tok",
          cat("(", t.num_experts_per_tok, ") must be in [1, num_experts = ", t.num_experts, "]"));
    for (size_t i = 0; i < t.mlp_only_layers.size(); ++i)
      if (t.mlp_only_layers[i] < 0 || t.mlp_only_layers[i] >= t.num_hidden_layers)
        bad(cat("text_config.mlp_only_layers[", i, "]"),
            cat("(", t.mlp_only_layers[i], ") must be a layer in [0, num_hidden_layers = ", t.num_hidden_layers, ")"));
  }

  // The multimodal rotary embedding: pairs of a head's dimensions, split
  // between the t, h and w positions.
  if (!(t.rope_theta > 0)) bad(rope.rope_theta, "must be positive");
  // "mrope" is the older name of the same plain (unscaled) multimodal rotary.
  if (t.rope_type != "default" && t.rope_type != "mrope")
    bad(rope.rope_type, cat("is \"", t.rope_type, "\"; qvl supports only the default (unscaled) rotary embedding"));
  if (t.head_dim % 2 != 0) bad("text_config.head_dim", cat("(", t.head_dim, ") must be even for the rotary embedding"));
  const std::vector<int>& sec = t.mrope_section;
  if (sec.size() != 3) bad(rope.mrope_section, cat("must have 3 entries (t, h, w), got ", sec.size()));
  for (int s : sec)
    if (s < 0) bad(rope.mrope_section, cat("has a negative entry (", s, ")"));
  const int sum = std::accumulate(sec.begin(), sec.end(), 0);
  if (sum != t.head_dim / 2)
    bad(rope.mrope_section, cat("sums to ", sum, " but must equal head_dim / 2 = ", t.head_dim / 2));

  // The vision encoder.
  positive("vision_config.depth", v.depth);
  positive("vision_config.hidden_size", v.hidden_size);
  positive("vision_config.intermediate_size", v.intermediate_size);
  positive("vision_config.num_heads", v.num_heads);
  positive("vision_config.in_channels", v.in_channels);
  positive("vision_config.patch_size", v.patch_size);
  positive("vision_config.spatial_merge_size", v.spatial_merge_size);
  positive("vision_config.temporal_patch_size", v.temporal_patch_size);
  positive("vision_config.out_hidden_size", v.out_hidden_size);
  positive("vision_config.num_position_embeddings", v.num_position_embeddings);
  if (v.hidden_size % v.num_heads != 0)
    bad("vision_config.hidden_size", cat("(", v.hidden_size, ") is not divisible by num_heads (", v.num_heads, ")"));
  // The 2-D rotary splits each half of a head between rows and columns.
  if (v.head_dim() % 4 != 0)
    bad("vision_config.num_heads",
        cat("gives head dim ", v.head_dim(), ", which must be a multiple of 4 for the 2-D rotary"));
  // The tanh approximation of GELU goes by three names in transformers.
  if (v.hidden_act != "gelu_pytorch_tanh" && v.hidden_act != "gelu_new" && v.hidden_act != "gelu_fast" &&
      v.hidden_act != "gelu")
    bad("vision_config.hidden_act", cat("is \"", v.hidden_act, "\"; qvl supports \"gelu\" and the tanh GELU ",
                                        "(\"gelu_pytorch_tanh\", \"gelu_new\", \"gelu_fast\")"));
  // The learned position embeddings are a square grid, interpolated to each image's.
  const int side = v.grid_per_side();
  if (side * side != v.num_position_embeddings)
    bad("vision_config.num_position_embeddings",
        cat("(", v.num_position_embeddings, ") must be a perfect square (a square grid)"));
  // The merger's output is what the text decoder reads in place of image tokens.
  if (v.out_hidden_size != t.hidden_size)
    bad("vision_config.out_hidden_size",
        cat("(", v.out_hidden_size, ") must equal text_config.hidden_size (", t.hidden_size, ")"));
  const std::vector<int>& ds = v.deepstack_visual_indexes;
  for (size_t i = 0; i < ds.size(); ++i) {
    if (ds[i] < 0 || ds[i] >= v.depth)
      bad(cat("vision_config.deepstack_visual_indexes[", i, "]"),
          cat("(", ds[i], ") must be a vision layer in [0, depth = ", v.depth, ")"));
    if (std::count(ds.begin(), ds.end(), ds[i]) > 1)
      bad("vision_config.deepstack_visual_indexes", cat("repeats layer ", ds[i]));
  }
  // DeepStack feature k is added to text layer k.
  if (static_cast<int>(ds.size()) > t.num_hidden_layers)
    bad("vision_config.deepstack_visual_indexes",
        cat("has ", ds.size(), " entries but the text model has only ", t.num_hidden_layers, " layers"));

  // The special tokens are rows of the embedding table.
  const std::pair<const char*, int> token_ids[] = {{"image_token_id", c.image_token_id},
                                                   {"video_token_id", c.video_token_id},
                                                   {"vision_start_token_id", c.vision_start_token_id},
                                                   {"vision_end_token_id", c.vision_end_token_id}};
  for (const auto& [key, id] : token_ids)
    if (id < 0 || id >= t.vocab_size) bad(key, cat("(", id, ") is outside the vocabulary [0, ", t.vocab_size, ")"));
}

// quantization_config: only fine-grained FP8 (E4M3 weights, one scale per
// 128×128 block), as Qwen publishes its -FP8 checkpoints; any other method
// would need its own kernels or dequantizer, so it is refused by name.
Fp8Quantization parse_quantization(const Fields& q) {
  const std::string method = q.string("quant_method");
  if (method != "fp8")
    q.error("quant_method", cat("is \"", method, "\"; qvl reads only fine-grained FP8 checkpoints (\"fp8\", ",
                                "as Qwen's -FP8 releases) or unquantized ones (no quantization_config)"));
  Fp8Quantization f;
  const std::string fmt = q.string("fmt", "e4m3");
  if (fmt != "e4m3") q.error("fmt", cat("is \"", fmt, "\"; qvl reads FP8 weights in \"e4m3\" only"));
  f.activation_scheme = q.string("activation_scheme", "dynamic");
  if (f.activation_scheme != "dynamic")
    q.error("activation_scheme", cat("is \"", f.activation_scheme, "\"; qvl reads only \"dynamic\" FP8 ",
                                     "checkpoints (static ones carry activation scales qvl does not apply)"));
  if (q.has("weight_block_size")) {
    const std::vector<int> b = q.int_list("weight_block_size");
    // 128×128 is what every FP8 release uses and what the goldens check; a
    // per-tensor or per-channel scale (null, other sizes) is another format.
    if (b != std::vector<int>{128, 128}) {
      std::string got;
      for (size_t i = 0; i < b.size(); ++i) got += cat(i ? ", " : "", b[i]);
      q.error("weight_block_size",
              cat("is [", got, "]; qvl reads FP8 weights with 128×128 block scales only ([128, 128])"));
    }
  } else {
    q.error("weight_block_size", "is missing; qvl reads FP8 weights with 128×128 block scales ([128, 128])");
  }
  if (q.has("modules_to_not_convert")) f.modules_to_not_convert = q.string_list("modules_to_not_convert");
  return f;
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
  if (c.model_type == "qwen3_vl_moe") parse_moe(text, c.text);
  RopeFields rope;
  c.dialect = parse_rope(text, c.text, rope);
  c.vision = parse_vision(vis);

  // Defaults are transformers' (Qwen3VLConfig); every published config sets them.
  c.image_token_id = top.integer("image_token_id", 151655);
  c.video_token_id = top.integer("video_token_id", 151656);
  c.vision_start_token_id = top.integer("vision_start_token_id", 151652);
  c.vision_end_token_id = top.integer("vision_end_token_id", 151653);
  c.tie_word_embeddings = text.has("tie_word_embeddings") ? text.boolean("tie_word_embeddings", false)
                                                          : top.boolean("tie_word_embeddings", false);
  if (text.has("eos_token_id"))
    c.eos_token_ids = text.int_or_list("eos_token_id");
  else if (top.has("eos_token_id"))
    c.eos_token_ids = top.int_or_list("eos_token_id");
  if (std::optional<Fields> q = top.opt_object("quantization_config")) c.fp8 = parse_quantization(*q);
  validate(c, source, rope);
  return c;
}

}  // namespace qvl
