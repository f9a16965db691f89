// The model folder around config.json: preprocessor_config.json,
// generation_config.json, the chat template, tokenizer.json and the weights.
#include <cmath>
#include <filesystem>

#include "io/json_fields.h"
#include "io/model_config.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qvl {

namespace fs = std::filesystem;
using io_detail::Fields;

namespace {

std::array<float, 3> rgb(const Fields& f, const std::string& key, std::array<float, 3> def) {
  if (!f.has(key)) return def;
  std::vector<double> v = f.number_list(key);
  if (v.size() != 3) f.error(key, cat("must have 3 entries (R, G, B), got ", v.size()));
  return {static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The chat template, looked up where transformers looks: the processor's
// chat_template.jinja, then chat_template.json, then tokenizer_config.json.
void load_chat_template(const fs::path& dir, ModelFolder& m) {
  if (fs::path p = dir / "chat_template.jinja"; is_file(p)) {
    m.chat_template = read_file(p.string());
    m.chat_template_path = p.string();
    return;
  }
  if (fs::path p = dir / "chat_template.json"; is_file(p)) {
    auto root = io_detail::parse_json_text(read_file(p.string()), p.string());
    m.chat_template = Fields(root, p.string(), "").string("chat_template");
    m.chat_template_path = p.string();
    return;
  }
  if (fs::path p = dir / "tokenizer_config.json"; is_file(p)) {
    auto root = io_detail::parse_json_text(read_file(p.string()), p.string());
    Fields f(root, p.string(), "");
    if (!f.has("chat_template")) return;
    const auto& t = root["chat_template"];
    if (t.is_string()) {
      m.chat_template = t.get<std::string>();
    } else if (t.is_array()) {  // named templates: [{"name": "default", "template": "..."}]
      for (const auto& e : t)
        // Compared, not read with value(): a "name" that is not a string is not the default.
        if (e.is_object() && e.contains("name") && e["name"] == "default" && e.contains("template") &&
            e["template"].is_string())
          m.chat_template = e["template"].get<std::string>();
      if (m.chat_template.empty()) f.error("chat_template", "is a list without a \"default\" template");
    } else {
      f.error("chat_template", cat("must be a string (got ", Fields::kind(t), ")"));
    }
    m.chat_template_path = p.string();
  }
}

}  // namespace

PreprocessorConfig parse_preprocessor_config(const std::string& json_text, const std::string& source) {
  auto root = io_detail::parse_json_text(json_text, source);
  Fields f(root, source, "");
  PreprocessorConfig p;
  p.patch_size = f.integer("patch_size", p.patch_size);
  p.temporal_patch_size = f.integer("temporal_patch_size", p.temporal_patch_size);
  p.merge_size = f.integer("merge_size", p.merge_size);
  for (const char* key : {"patch_size", "temporal_patch_size", "merge_size"})
    if (f.has(key) && f.i64(key) <= 0) f.error(key, cat("must be positive (got ", f.i64(key), ")"));

  // transformers' Qwen2-VL image processor: size {shortest_edge, longest_edge}
  // are pixel counts; top-level min_pixels / max_pixels override them.
  std::optional<Fields> size = f.opt_object("size");
  auto pixels = [&](const char* top_key, const char* size_key, const char* alt_key) -> int64_t {
    if (f.has(top_key)) return f.i64(top_key);
    if (size && size->has(size_key)) return size->i64(size_key);
    if (size && size->has(alt_key)) return size->i64(alt_key);
    f.error(cat("size.", size_key), cat("is missing (and so is ", top_key, ")"));
  };
  p.min_pixels = pixels("min_pixels", "shortest_edge", "min_pixels");
  p.max_pixels = pixels("max_pixels", "longest_edge", "max_pixels");
  if (p.min_pixels <= 0) f.error(f.has("min_pixels") ? "min_pixels" : "size.shortest_edge", cat("must be positive (got ", p.min_pixels, ")"));
  if (p.max_pixels < p.min_pixels)
    f.error(f.has("max_pixels") ? "max_pixels" : "size.longest_edge",
            cat("(", p.max_pixels, ") must be at least the minimum (", p.min_pixels, ")"));

  // Absent mean/std mean the processor's defaults: OpenAI CLIP's statistics
  // (transformers image_utils OPENAI_CLIP_MEAN / OPENAI_CLIP_STD).
  p.image_mean = rgb(f, "image_mean", {0.48145466f, 0.4578275f, 0.40821073f});
  p.image_std = rgb(f, "image_std", {0.26862954f, 0.26130258f, 0.27577711f});
  for (float s : p.image_std)
    if (!(s > 0)) f.error("image_std", "entries must be positive");
  p.rescale_factor = f.number("rescale_factor", p.rescale_factor);
  if (!(p.rescale_factor > 0)) f.error("rescale_factor", "must be positive");
  p.do_resize = f.boolean("do_resize", true);
  p.do_rescale = f.boolean("do_rescale", true);
  p.do_normalize = f.boolean("do_normalize", true);
  p.do_convert_rgb = f.boolean("do_convert_rgb", true);
  return p;
}

VideoPreprocessorConfig parse_video_preprocessor_config(const std::string& json_text, const std::string& source) {
  VideoPreprocessorConfig v;
  v.frames = parse_preprocessor_config(json_text, source);
  auto root = io_detail::parse_json_text(json_text, source);
  Fields f(root, source, "");
  v.fps = f.number("fps", v.fps);
  if (!(v.fps > 0) || !std::isfinite(v.fps)) f.error("fps", "must be a positive number");
  v.min_frames = f.integer("min_frames", v.min_frames);
  v.max_frames = f.integer("max_frames", v.max_frames);
  if (v.min_frames < 1) f.error("min_frames", "must be positive");
  if (v.max_frames < v.min_frames) f.error("max_frames", cat("must be at least min_frames (", v.min_frames, ")"));
  return v;
}

GenerationConfig parse_generation_config(const std::string& json_text, const std::string& source) {
  auto root = io_detail::parse_json_text(json_text, source);
  Fields f(root, source, "");
  GenerationConfig g;
  if (f.has("eos_token_id")) g.eos_token_ids = f.int_or_list("eos_token_id");
  for (size_t i = 0; i < g.eos_token_ids.size(); ++i)
    if (g.eos_token_ids[i] < 0) f.error("eos_token_id", cat("has a negative id (", g.eos_token_ids[i], ")"));
  if (f.has("bos_token_id")) g.bos_token_id = f.integer("bos_token_id");
  if (f.has("pad_token_id")) g.pad_token_id = f.integer("pad_token_id");
  if (f.has("do_sample")) g.do_sample = f.boolean("do_sample", false);
  if (f.has("temperature")) g.temperature = f.number("temperature");
  if (f.has("top_p")) g.top_p = f.number("top_p");
  if (f.has("min_p")) g.min_p = f.number("min_p");
  if (f.has("repetition_penalty")) g.repetition_penalty = f.number("repetition_penalty");
  if (f.has("top_k")) g.top_k = f.integer("top_k");
  if (f.has("max_new_tokens")) g.max_new_tokens = f.integer("max_new_tokens");
  if (g.temperature && *g.temperature < 0) f.error("temperature", "must not be negative");
  if (g.top_p && !(*g.top_p > 0 && *g.top_p <= 1)) f.error("top_p", "must be in (0, 1]");
  if (g.min_p && !(*g.min_p >= 0 && *g.min_p <= 1)) f.error("min_p", "must be in [0, 1]");
  if (g.repetition_penalty && !(*g.repetition_penalty > 0)) f.error("repetition_penalty", "must be positive");
  if (g.top_k && *g.top_k < 0) f.error("top_k", "must not be negative");
  if (g.max_new_tokens && *g.max_new_tokens <= 0) f.error("max_new_tokens", "must be positive");
  return g;
}

ModelFolder ModelFolder::open(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) fail(dir, ": no such folder");
  if (!fs::is_directory(dir, ec)) fail(dir, ": not a folder (--model takes a model folder)");
  const fs::path d(dir);
  auto required = [&](const char* name) {
    fs::path p = d / name;
    if (!is_file(p)) fail(p.string(), ": missing (is ", dir, " a Qwen3-VL model folder?)");
    return p.string();
  };

  ModelFolder m;
  m.dir = dir;
  const std::string config_path = required("config.json");
  m.config = parse_model_config(read_file(config_path), config_path);

  const std::string pre_path = required("preprocessor_config.json");
  m.preprocessor = parse_preprocessor_config(read_file(pre_path), pre_path);
  const VisionConfig& v = m.config.vision;
  auto same = [&](const char* field, int got, const char* vision_field, int want) {
    if (got != want)
      fail(pre_path, ": field ", field, " (", got, ") differs from vision_config.", vision_field, " (", want, ") in ", config_path);
  };
  same("patch_size", m.preprocessor.patch_size, "patch_size", v.patch_size);
  same("merge_size", m.preprocessor.merge_size, "spatial_merge_size", v.spatial_merge_size);
  same("temporal_patch_size", m.preprocessor.temporal_patch_size, "temporal_patch_size", v.temporal_patch_size);
  if (fs::path p = d / "video_preprocessor_config.json"; is_file(p)) {
    m.video_preprocessor = parse_video_preprocessor_config(read_file(p.string()), p.string());
    const PreprocessorConfig& f = m.video_preprocessor.frames;
    if (f.patch_size != v.patch_size || f.merge_size != v.spatial_merge_size ||
        f.temporal_patch_size != v.temporal_patch_size)
      fail(p.string(), ": patch_size, merge_size or temporal_patch_size differs from vision_config in ", config_path);
  }

  if (fs::path p = d / "generation_config.json"; is_file(p))
    m.generation = parse_generation_config(read_file(p.string()), p.string());
  if (m.generation.eos_token_ids.empty()) m.generation.eos_token_ids = m.config.eos_token_ids;
  for (int id : m.generation.eos_token_ids)
    if (id >= m.config.text.vocab_size)
      fail((d / "generation_config.json").string(), ": field eos_token_id (", id, ") is outside the vocabulary [0, ",
           m.config.text.vocab_size, ")");

  load_chat_template(d, m);
  m.tokenizer_json = required("tokenizer.json");
  if (fs::path p = d / "model.safetensors.index.json"; is_file(p))
    m.weights_path = p.string();
  else if (fs::path p1 = d / "model.safetensors"; is_file(p1))
    m.weights_path = p1.string();
  else
    fail(dir, ": no weights (model.safetensors or model.safetensors.index.json)");
  return m;
}

}  // namespace qvl
