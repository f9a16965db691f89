// qvl info: what a model folder holds — architecture, parameter counts from
// the tensors, dtypes, bytes on disk, image token size, context, dims — as
// text or (--json) one JSON object. The checkpoint is checked against the
// names and shapes config.json implies, so a folder that cannot run fails here.
// A folder with config.json and no weights (a model not downloaded, or too
// big for this machine) is summarised from config.json alone: parameters,
// the bytes of each weight format and what the default rule would load.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/model_summary.h"
#include "io/model_source.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

using json = nlohmann::ordered_json;

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
std::string quantization_text(const ModelSummary& s) {
  const std::optional<Fp8Quantization>& q = s.config.fp8;
  if (!q) return cat("none (loads as ", weight_format_name(s.default_format), " unless --weights says)");
  std::string scales;
  for (const std::string& d : s.scale_dtypes) scales += (scales.empty() ? "" : ", ") + d;
  return cat("FP8 E4M3 (quant_method fp8, activations ", q->activation_scheme, "), ", q->weight_block_size[0], "x",
             q->weight_block_size[1], " block scales (", scales.empty() ? "none" : scales, "); ",
             s.has_weights ? cat(s.fp8_tensors, " weight tensors quantized, the rest as stored")
                           : std::string("the text linears quantized"),
             "; dequantized at load into ", weight_format_name(s.default_format), " unless --weights says",
             s.experts == ExpertLayout::PerExpert ? "; experts stored one by one" : "");
}

json quantization_json(const ModelSummary& s) {
  const std::optional<Fp8Quantization>& q = s.config.fp8;
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

void print_text(const ModelSummary& s) {
  const ModelConfig& c = s.config;
  const TextConfig& t = c.text;
  const VisionConfig& v = c.vision;
  std::string arch = c.architectures.empty() ? c.model_type : c.architectures[0];
  auto row = [](const char* key, const std::string& value) { std::cout << std::left << std::setw(14) << key << value << "\n"; };
  row("model", s.dir);
  row("architecture", cat(arch, " (model_type ", c.model_type, ", config.json in the ", c.dialect, " dialect)"));
  row("parameters", cat(millions(s.params.total()), " total: vision ", millions(s.params.vision), ", text ",
                        millions(s.params.text), s.has_weights ? "" : " (from config.json's shapes)"));
  if (s.has_weights) {
    std::string dtypes;
    for (const auto& d : s.dtypes) dtypes += (dtypes.empty() ? "" : ", ") + d;
    row("weights", cat(dtypes, "; ", s.tensors, " tensors in ", s.weight_files.size(), " file(s), ",
                       bytes(s.weight_bytes), " (", s.weight_bytes, " bytes); folder ", bytes(s.folder_bytes)));
  } else {
    const uint64_t published = s.checkpoint_bytes_from_config;
    row("weights", cat("none in the folder (config.json only): the checkpoint would be ", s.tensors, " tensors, ",
                       bytes(published), " (", published, " bytes)"));
  }
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
    row("active", cat(millions(s.params.text_active), " text parameters per token (the chosen experts only)"));
  }
  for (const ModelSummary::Format& r : s.formats)
    row(r.format == WeightFormat::BF16 ? "formats" : "",
        cat(weight_format_name(r.format), ": matrices ", bytes(r.footprint.matrix_bytes), ", weights in memory ",
            bytes(r.footprint.memory_bytes), ", a decode step reads ", bytes(r.footprint.decode_bytes)));
  row("default", cat(weight_format_name(s.default_format), " on this machine (", bytes(s.memory_bytes),
                     " of memory: the most exact format whose weights take at most half of it)"));
  row("context", cat(t.max_position_embeddings, " tokens (max_position_embeddings)"));
  std::ostringstream theta;
  theta << std::setprecision(12) << t.rope_theta;
  row("rope", cat("M-RoPE theta ", theta.str(), ", sections ", list(t.mrope_section), " (t, h, w)",
                  t.mrope_interleaved ? ", interleaved" : ", chunked"));
  row("vision", cat(v.depth, " blocks, hidden ", v.hidden_size, ", MLP ", v.intermediate_size, ", ", v.num_heads,
                    " heads, patch ", v.patch_size, ", temporal ", v.temporal_patch_size, ", merge ", v.spatial_merge_size,
                    ", ", v.grid_per_side(), "x", v.grid_per_side(), " position grid, ", v.hidden_act));
  if (s.preprocessor) {
    const PreprocessorConfig& p = *s.preprocessor;
    row("image tokens", cat("1 token per ", p.factor(), "x", p.factor(), " pixels; ", image_tokens(p.min_pixels, p),
                            " to ", image_tokens(p.max_pixels, p), " tokens per image (min_pixels ", p.min_pixels,
                            ", max_pixels ", p.max_pixels, ")"));
  }
  std::vector<int> text_layers;
  for (size_t k = 0; k < v.deepstack_visual_indexes.size(); ++k) text_layers.push_back(static_cast<int>(k));
  row("deepstack", cat("vision layers ", list(v.deepstack_visual_indexes), " -> text layers ", list(text_layers)));
  row("lm head", c.tie_word_embeddings ? "tied to the input embeddings" : "untied (lm_head.weight)");
  row("eos", list(s.eos_token_ids));
  if (s.has_weights)
    row("chat template", s.chat_template_path.empty() ? std::string("none") : s.chat_template_path);
}

void print_json(const ModelSummary& s) {
  const ModelConfig& c = s.config;
  const TextConfig& t = c.text;
  const VisionConfig& v = c.vision;
  json j;
  j["model"] = s.dir;
  j["architecture"] = c.architectures.empty() ? c.model_type : c.architectures[0];
  j["model_type"] = c.model_type;
  j["config_dialect"] = c.dialect;
  j["has_weights"] = s.has_weights;
  j["parameters"] = {{"total", s.params.total()},
                     {"vision", s.params.vision},
                     {"text", s.params.text},
                     {"text_active_per_token", s.params.text_active}};
  j["dtypes"] = std::vector<std::string>(s.dtypes.begin(), s.dtypes.end());
  j["quantization"] = quantization_json(s);
  j["default_weights"] = weight_format_name(s.default_format);
  j["machine_memory_bytes"] = s.memory_bytes;
  json formats = json::object();
  for (const ModelSummary::Format& r : s.formats)
    formats[weight_format_name(r.format)] = {{"matrix_bytes", r.footprint.matrix_bytes},
                                             {"memory_bytes", r.footprint.memory_bytes},
                                             {"decode_bytes", r.footprint.decode_bytes}};
  j["formats"] = formats;
  j["tensors"] = s.tensors;
  j["unused_tensors"] = s.unexpected;
  j["weight_files"] = s.weight_files;
  j["weight_bytes"] = s.weight_bytes;
  j["checkpoint_bytes_from_config"] = s.checkpoint_bytes_from_config;
  j["folder_bytes"] = s.folder_bytes;
  j["context_length"] = t.max_position_embeddings;
  j["text"] = {{"num_hidden_layers", t.num_hidden_layers},   {"hidden_size", t.hidden_size},
               {"intermediate_size", t.intermediate_size},   {"num_attention_heads", t.num_attention_heads},
               {"num_key_value_heads", t.num_key_value_heads}, {"head_dim", t.head_dim},
               {"vocab_size", t.vocab_size},                 {"rms_norm_eps", t.rms_norm_eps},
               {"rope_theta", t.rope_theta},                 {"mrope_section", t.mrope_section},
               {"mrope_interleaved", t.mrope_interleaved}};
  if (t.num_experts > 0)
    j["experts"] = {{"num_experts", t.num_experts},
                    {"num_experts_per_tok", t.num_experts_per_tok},
                    {"moe_intermediate_size", t.moe_intermediate_size},
                    {"norm_topk_prob", t.norm_topk_prob}};
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
  if (s.preprocessor) {
    const PreprocessorConfig& p = *s.preprocessor;
    j["image"] = {{"pixels_per_token_side", p.factor()},
                  {"min_pixels", p.min_pixels},
                  {"max_pixels", p.max_pixels},
                  {"min_tokens", image_tokens(p.min_pixels, p)},
                  {"max_tokens", image_tokens(p.max_pixels, p)}};
  } else {
    j["image"] = nullptr;
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["lm_head"] = c.tie_word_embeddings ? "tied" : "untied";
  j["deepstack_visual_indexes"] = v.deepstack_visual_indexes;
  j["token_ids"] = {{"image", c.image_token_id},
                    {"video", c.video_token_id},
                    {"vision_start", c.vision_start_token_id},
                    {"vision_end", c.vision_end_token_id},
                    {"eos", s.eos_token_ids}};
  j["chat_template"] = s.chat_template_path.empty() ? json(nullptr) : json(s.chat_template_path);
  std::cout << j.dump(2) << "\n";
}

}  // namespace

int cmd_info(int argc, char** argv) {
  Args args("info", "--model DIR [--json]",
            "Summarises a Qwen3-VL model folder: architecture, parameter counts, dtypes, size on disk,\n"
            "bytes per weight format and the default one here, image token size, context length and\n"
            "dimensions. A folder with config.json and no weights is summarised from config.json alone.\n"
            "Fails (exit 1) on a folder qvl cannot run.");
  ModelChoice model;
  bool as_json = false;
  visit_options(model, args);
  args(as_json, "json", "print one JSON object instead of text");
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("info: unexpected argument '", args.positional()[0], "' (see qvl info --help)"));
  if (!args.has("model")) throw UsageError("info: --model is required (see qvl info --help)");
  std::string dir = resolve_model(model.model, model.source);
  ModelSummary s = summarize_model_folder(dir);
  if (as_json)
    print_json(s);
  else
    print_text(s);
  return 0;
}

}  // namespace qvl::cli
