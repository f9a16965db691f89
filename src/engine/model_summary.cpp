#include "engine/model_summary.h"

#include <filesystem>
#include <sstream>

#include "io/safetensors.h"
#include "model/default_weights.h"
#include "model/fp8_weights.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

// Every tensor config.json implies must be present with its shape.
// An FP8 weight needs config.json's quantization_config and its block scales
// (model/fp8_weights.h checks their values when the model loads).
void check_checkpoint(const ModelConfig& config, const SafeTensors& st, ModelSummary& s) {
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

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// A folder with weights: the checkpoint checked and counted.
ModelSummary summarize_checkpoint(const std::string& dir) {
  const ModelFolder folder = ModelFolder::open(dir);
  ModelSummary s;
  s.dir = folder.dir;
  s.config = folder.config;
  s.preprocessor = folder.preprocessor;
  s.eos_token_ids = folder.generation.eos_token_ids;
  s.chat_template_path = folder.chat_template_path;
  SafeTensors st = SafeTensors::open(folder.weights_path);
  check_checkpoint(s.config, st, s);
  for (const auto& [name, v] : st.tensors()) {
    if (name.size() > 10 && name.compare(name.size() - 10, 10, "_scale_inv") == 0) continue;  // not parameters
    (name.rfind("model.visual.", 0) == 0 ? s.params.vision : s.params.text) += v.numel();
    s.dtypes.insert(dtype_name(v.dtype));
  }
  // A token runs num_experts_per_tok of each sparse layer's experts (the
  // same count whether they are fused or stored one by one).
  const ParameterCounts implied = parameter_counts(s.config);
  s.params.text_active = s.params.text - (implied.text - implied.text_active);
  s.tensors = st.tensors().size();
  s.weight_files = st.files();
  s.weight_bytes = st.total_bytes();
  s.memory_bytes = machine_memory_bytes();
  s.default_format = default_weight_format(s.weight_bytes, s.memory_bytes, s.config.fp8.has_value());
  return s;
}

// A folder with config.json and no weights: what its checkpoint would hold
// and take. The other files are read when present.
ModelSummary summarize_config(const std::string& dir) {
  ModelSummary s;
  s.dir = dir;
  s.has_weights = false;
  const fs::path d(dir);
  const std::string config_path = (d / "config.json").string();
  if (!is_file(config_path)) fail(config_path, ": missing (is ", dir, " a Qwen3-VL model folder?)");
  s.config = parse_model_config(read_file(config_path), config_path);
  if (const fs::path p = d / "preprocessor_config.json"; is_file(p))
    s.preprocessor = parse_preprocessor_config(read_file(p.string()), p.string());
  if (const fs::path p = d / "generation_config.json"; is_file(p))
    s.eos_token_ids = parse_generation_config(read_file(p.string()), p.string()).eos_token_ids;
  if (s.eos_token_ids.empty()) s.eos_token_ids = s.config.eos_token_ids;
  s.params = parameter_counts(s.config);
  s.tensors = qwen3vl_checkpoint_tensors(s.config).size();
  s.memory_bytes = machine_memory_bytes();
  s.default_format =
      default_weight_format(published_checkpoint_bytes(s.config), s.memory_bytes, s.config.fp8.has_value());
  return s;
}

}  // namespace

ModelSummary summarize_model_folder(const std::string& dir) {
  const fs::path d(dir);
  std::error_code ec;
  const bool weights = is_file(d / "model.safetensors") || is_file(d / "model.safetensors.index.json");
  ModelSummary s = weights || !fs::is_directory(d, ec) ? summarize_checkpoint(dir) : summarize_config(dir);
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) s.folder_bytes += e.file_size(ec);
  s.checkpoint_bytes_from_config = published_checkpoint_bytes(s.config);
  for (WeightFormat f : {WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4})
    s.formats.push_back({f, weight_footprint(s.config, f)});
  return s;
}

}  // namespace qvl
