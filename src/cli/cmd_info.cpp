// qvl info: what a model folder holds — architecture, parameter counts from
// the tensors, dtypes, bytes on disk, image token size, context, dims — as
// text or (--json) one JSON object. The checkpoint is checked against the
// names and shapes config.json implies, so a folder that cannot run fails here.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "io/checkpoint_layout.h"
#include "io/model_config.h"
#include "io/model_source.h"
#include "io/safetensors.h"
#include "engine/engine.h"
#include "model/default_weights.h"
#include "model/fp8_weights.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

struct Summary {
  ModelFolder folder;
  int64_t vision_params = 0, text_params = 0;
  // Text parameters one token passes through: a sparse layer's unchosen
  // experts left out (= text_params for a dense model).
  int64_t text_active_params = 0;
  std::set<std::string> dtypes;
  std::vector<std::string> weight_files;
  size_t weight_bytes = 0, folder_bytes = 0;
  size_t tensors = 0;
  std::vector<std::string> unexpected;  // in the checkpoint, not implied by config.json
  ExpertLayout experts = ExpertLayout::Fused;
  size_t fp8_tensors = 0;               // F8_E4M3 weights (each with a _scale_inv)
  std::set<std::string> scale_dtypes;   // of their block scales
};

// Every tensor config.json implies must be present with its shape.
// An FP8 weight needs config.json's quantization_config and its block scales
// (model/fp8_weights.h checks their values when the model loads).
void check_checkpoint(const ModelConfig& config, const SafeTensors& st, Summary& s) {
  std::set<std::string> expected;
  s.experts = expert_layout(config.text, [&](const std::string& n) { return st.find(n) != nullptr; });
  for (const TensorInfo& t : qwen3vl_checkpoint_tensors(config, DType::BF16, s.experts)) {
    expected.insert(t.name);
    const TensorView* v = st.find(t.name);
    if (!v)
      fail(st.files().front(), ": tensor '", t.name, "' is missing (config.json implies it",
           t.name == "lm_head.weight" ? "; tie_word_embeddings is false" : "", ")");
    if (v->shape != t.shape) {
      std::ostringstream got, want;
      for (int64_t d : v->shape) got << (got.tellp() ? "," : "") << d;
      for (int64_t d : t.shape) want << (want.tellp() ? "," : "") << d;
      fail(*v->file, ": tensor '", t.name, "' has shape [", got.str(), "] but config.json implies [", want.str(), "]");
    }
    if (v->dtype == DType::F8_E4M3) {
      const TensorView* scale = st.find(fp8_scale_name(t.name));
      if (!config.fp8)
        fail(*v->file, ": tensor '", t.name, "' is F8_E4M3 but config.json has no quantization_config");
      if (!scale) fail(*v->file, ": tensor '", t.name, "' is F8_E4M3 but has no ", fp8_scale_name(t.name));
      expected.insert(scale->name);
      s.scale_dtypes.insert(dtype_name(scale->dtype));
      ++s.fp8_tensors;
    }
  }
  for (const auto& [name, v] : st.tensors())
    if (!expected.count(name)) s.unexpected.push_back(name);
}

Summary summarize(const std::string& dir) {
  Summary s{ModelFolder::open(dir)};
  SafeTensors st = SafeTensors::open(s.folder.weights_path);
  check_checkpoint(s.folder.config, st, s);
  for (const auto& [name, v] : st.tensors()) {
    if (name.size() > 10 && name.compare(name.size() - 10, 10, "_scale_inv") == 0) continue;  // not parameters
    (name.rfind("model.visual.", 0) == 0 ? s.vision_params : s.text_params) += v.numel();
    s.dtypes.insert(dtype_name(v.dtype));
  }
  // Of each sparse layer's experts (the fused table's last two tensors, as
  // many weights as when stored one by one), a token runs
  // num_experts_per_tok of num_experts.
  const TextConfig& t = s.folder.config.text;
  s.text_active_params = s.text_params;
  for (int i = 0; i < t.num_hidden_layers; ++i) {
    if (!t.sparse_layer(i)) continue;
    const std::vector<TensorInfo> mlp = text_mlp_tensors(t, i);
    const int64_t experts = mlp[1].numel() + mlp[2].numel();
    s.text_active_params -= experts / t.num_experts * (t.num_experts - t.num_experts_per_tok);
  }
  s.tensors = st.tensors().size();
  s.weight_files = st.files();
  s.weight_bytes = st.total_bytes();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) s.folder_bytes += e.file_size(ec);
  return s;
}

std::string millions(int64_t n) {
  std::ostringstream o;
  if (n >= 1000000000)
    o << std::fixed << std::setprecision(2) << n / 1e9 << " B";
  else
    o << std::fixed << std::setprecision(2) << n / 1e6 << " M";
  return o.str();
}

std::string bytes(size_t n) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1);
  if (n >= (1ull << 30)) o << n / double(1ull << 30) << " GiB";
  else o << n / double(1ull << 20) << " MiB";
  return o.str();
}

template <typename T>
std::string list(const std::vector<T>& v) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << v[i];
  return o.str() + "]";
}

int64_t image_tokens(int64_t pixels, const PreprocessorConfig& p) {
  return pixels / (int64_t{p.factor()} * p.factor());
}

// What config.json's quantization_config says and the checkpoint holds.
std::string quantization_text(const Summary& s) {
  const std::optional<Fp8Quantization>& q = s.folder.config.fp8;
  if (!q) return cat("none (loads as ", weight_format_name(default_weight_format(s.folder.dir)), " unless --weights says)");
  std::string scales;
  for (const std::string& d : s.scale_dtypes) scales += (scales.empty() ? "" : ", ") + d;
  return cat("FP8 E4M3 (quant_method fp8, activations ", q->activation_scheme, "), ", q->weight_block_size[0], "x",
             q->weight_block_size[1], " block scales (", scales.empty() ? "none" : scales, "); ", s.fp8_tensors,
             " weight tensors quantized, the rest as stored; dequantized at load into ",
             weight_format_name(default_weight_format(s.folder.dir)), " unless --weights says",
             s.experts == ExpertLayout::PerExpert ? "; experts stored one by one" : "");
}

json quantization_json(const Summary& s) {
  const std::optional<Fp8Quantization>& q = s.folder.config.fp8;
  if (!q) return nullptr;
  return {{"quant_method", "fp8"},
          {"fmt", "e4m3"},
          {"weight_block_size", q->weight_block_size},
          {"activation_scheme", q->activation_scheme},
          {"modules_to_not_convert", q->modules_to_not_convert},
          {"quantized_tensors", s.fp8_tensors},
          {"scale_dtypes", std::vector<std::string>(s.scale_dtypes.begin(), s.scale_dtypes.end())},
          {"experts", s.experts == ExpertLayout::PerExpert ? "per_expert" : "fused"}};
}

void print_text(const Summary& s) {
  const ModelConfig& c = s.folder.config;
  const TextConfig& t = c.text;
  const VisionConfig& v = c.vision;
  const PreprocessorConfig& p = s.folder.preprocessor;
  std::string arch = c.architectures.empty() ? c.model_type : c.architectures[0];
  auto row = [](const char* key, const std::string& value) { std::cout << std::left << std::setw(14) << key << value << "\n"; };
  row("model", s.folder.dir);
  row("architecture", cat(arch, " (model_type ", c.model_type, ", config.json in the ", c.dialect, " dialect)"));
  row("parameters", cat(millions(s.vision_params + s.text_params), " total: vision ", millions(s.vision_params), ", text ",
                        millions(s.text_params)));
  std::string dtypes;
  for (const auto& d : s.dtypes) dtypes += (dtypes.empty() ? "" : ", ") + d;
  row("weights", cat(dtypes, "; ", s.tensors, " tensors in ", s.weight_files.size(), " file(s), ", bytes(s.weight_bytes),
                     " (", s.weight_bytes, " bytes); folder ", bytes(s.folder_bytes)));
  if (!s.unexpected.empty())
    row("unused", cat(s.unexpected.size(), " tensor(s) config.json does not imply, e.g. ", s.unexpected.front()));
  row("quantization", quantization_text(s));
  row("text", cat(t.num_hidden_layers, " layers, hidden ", t.hidden_size, ", MLP ", t.intermediate_size, ", heads ",
                  t.num_attention_heads, " query / ", t.num_key_value_heads, " key-value, head dim ", t.head_dim, ", vocab ",
                  t.vocab_size));
  if (t.num_experts > 0) {
    int sparse = 0;
    for (int i = 0; i < t.num_hidden_layers; ++i) sparse += t.sparse_layer(i);
    row("experts", cat(t.num_experts, " per sparse layer (", sparse, " of ", t.num_hidden_layers, " layers), ",
                       t.num_experts_per_tok, " active per token, width ", t.moe_intermediate_size,
                       t.norm_topk_prob ? ", weights renormalised" : ", raw softmax weights"));
    row("active", cat(millions(s.text_active_params), " text parameters per token (the chosen experts only)"));
  }
  row("context", cat(t.max_position_embeddings, " tokens (max_position_embeddings)"));
  std::ostringstream theta;
  theta << std::setprecision(12) << t.rope_theta;
  row("rope", cat("M-RoPE theta ", theta.str(), ", sections ", list(t.mrope_section), " (t, h, w)",
                  t.mrope_interleaved ? ", interleaved" : ", chunked"));
  row("vision", cat(v.depth, " blocks, hidden ", v.hidden_size, ", MLP ", v.intermediate_size, ", ", v.num_heads,
                    " heads, patch ", v.patch_size, ", temporal ", v.temporal_patch_size, ", merge ", v.spatial_merge_size,
                    ", ", v.grid_per_side(), "x", v.grid_per_side(), " position grid, ", v.hidden_act));
  row("image tokens", cat("1 token per ", p.factor(), "x", p.factor(), " pixels; ", image_tokens(p.min_pixels, p), " to ",
                          image_tokens(p.max_pixels, p), " tokens per image (min_pixels ", p.min_pixels, ", max_pixels ",
                          p.max_pixels, ")"));
  std::vector<int> text_layers;
  for (size_t k = 0; k < v.deepstack_visual_indexes.size(); ++k) text_layers.push_back(static_cast<int>(k));
  row("deepstack", cat("vision layers ", list(v.deepstack_visual_indexes), " -> text layers ", list(text_layers)));
  row("lm head", c.tie_word_embeddings ? "tied to the input embeddings" : "untied (lm_head.weight)");
  row("eos", list(s.folder.generation.eos_token_ids));
  row("chat template", s.folder.chat_template_path.empty() ? std::string("none") : s.folder.chat_template_path);
}

void print_json(const Summary& s) {
  const ModelConfig& c = s.folder.config;
  const TextConfig& t = c.text;
  const VisionConfig& v = c.vision;
  const PreprocessorConfig& p = s.folder.preprocessor;
  json j;
  j["model"] = s.folder.dir;
  j["architecture"] = c.architectures.empty() ? c.model_type : c.architectures[0];
  j["model_type"] = c.model_type;
  j["config_dialect"] = c.dialect;
  j["parameters"] = {{"total", s.vision_params + s.text_params},
                     {"vision", s.vision_params},
                     {"text", s.text_params},
                     {"text_active_per_token", s.text_active_params}};
  j["dtypes"] = std::vector<std::string>(s.dtypes.begin(), s.dtypes.end());
  j["quantization"] = quantization_json(s);
  j["default_weights"] = weight_format_name(default_weight_format(s.folder.dir));
  j["tensors"] = s.tensors;
  j["unused_tensors"] = s.unexpected;
  j["weight_files"] = s.weight_files;
  j["weight_bytes"] = s.weight_bytes;
  j["folder_bytes"] = s.folder_bytes;
  j["context_length"] = t.max_position_embeddings;
  j["text"] = {{"num_hidden_layers", t.num_hidden_layers},   {"hidden_size", t.hidden_size},
               {"intermediate_size", t.intermediate_size},   {"num_attention_heads", t.num_attention_heads},
               {"num_key_value_heads", t.num_key_value_heads}, {"head_dim", t.head_dim},
               {"vocab_size", t.vocab_size},                 {"rms_norm_eps", t.rms_norm_eps},
               {"rope_theta", t.rope_theta},                 {"mrope_section", t.mrope_section},
               {"mrope_interleaved", t.mrope_interleaved}};
  j["vision"] = {{"depth", v.depth},
                 {"hidden_size", v.hidden_size},
                 {"intermediate_size", v.intermediate_size},
                 {"num_heads", v.num_heads},
                 {"patch_size", v.patch_size},
                 {"temporal_patch_size", v.temporal_patch_size},
                 {"spatial_merge_size", v.spatial_merge_size},
                 {"num_position_embeddings", v.num_position_embeddings},
                 {"out_hidden_size", v.out_hidden_size},
                 {"hidden_act", v.hidden_act},
                 {"deepstack_visual_indexes", v.deepstack_visual_indexes}};
  j["image"] = {{"pixels_per_token_side", p.factor()},
                {"min_pixels", p.min_pixels},
                {"max_pixels", p.max_pixels},
                {"min_tokens", image_tokens(p.min_pixels, p)},
                {"max_tokens", image_tokens(p.max_pixels, p)}};
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["lm_head"] = c.tie_word_embeddings ? "tied" : "untied";
  j["deepstack_visual_indexes"] = v.deepstack_visual_indexes;
  j["token_ids"] = {{"image", c.image_token_id},
                    {"video", c.video_token_id},
                    {"vision_start", c.vision_start_token_id},
                    {"vision_end", c.vision_end_token_id},
                    {"eos", s.folder.generation.eos_token_ids}};
  j["chat_template"] = s.folder.chat_template_path.empty() ? json(nullptr) : json(s.folder.chat_template_path);
  std::cout << j.dump(2) << "\n";
}

}  // namespace

int cmd_info(int argc, char** argv) {
  Args args("info", "--model DIR [--json]",
            "Summarises a Qwen3-VL model folder: architecture, parameter counts, dtypes, size on disk,\n"
            "image token size, context length and dimensions. Fails (exit 1) on a folder qvl cannot run.");
  ModelChoice model;
  bool as_json = false;
  visit_options(model, args);
  args(as_json, "json", "print one JSON object instead of text");
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("info: unexpected argument '", args.positional()[0], "' (see qvl info --help)"));
  if (!args.has("model")) throw UsageError("info: --model is required (see qvl info --help)");
  std::string dir = resolve_model(model.model, model.source);
  Summary s = summarize(dir);
  if (as_json)
    print_json(s);
  else
    print_text(s);
  return 0;
}

}  // namespace qvl::cli
