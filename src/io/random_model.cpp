#include "io/random_model.h"

#include <chrono>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "io/checkpoint_layout.h"
#include "io/model_config.h"
#include "util/error.h"
#include "util/json_reader.h"
#include "util/mapped_file.h"

namespace qvl {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string& qwen3vl_2b_config_json() {
  static const std::string text = R"({
  "architectures": ["Qwen3VLForConditionalGeneration"],
  "image_token_id": 151655,
  "model_type": "qwen3_vl",
  "text_config": {
    "attention_bias": false,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "dtype": "bfloat16",
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 6144,
    "max_position_embeddings": 262144,
    "model_type": "qwen3_vl_text",
    "num_attention_heads": 16,
    "num_hidden_layers": 28,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"mrope_interleaved": true, "mrope_section": [24, 20, 20], "rope_type": "default"},
    "rope_theta": 5000000,
    "tie_word_embeddings": true,
    "use_cache": true,
    "vocab_size": 151936
  },
  "tie_word_embeddings": true,
  "transformers_version": "4.57.0.dev0",
  "video_token_id": 151656,
  "vision_config": {
    "deepstack_visual_indexes": [5, 11, 17],
    "depth": 24,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_size": 1024,
    "in_channels": 3,
    "initializer_range": 0.02,
    "intermediate_size": 4096,
    "model_type": "qwen3_vl",
    "num_heads": 16,
    "num_position_embeddings": 2304,
    "out_hidden_size": 2048,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2
  },
  "vision_end_token_id": 151653,
  "vision_start_token_id": 151652
}
)";
  return text;
}

namespace {

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a counter-based generator,
// so any element can be produced independently of the others.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t name_hash(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

inline uint16_t to_bf16(float f) {  // round to nearest even (no NaNs here)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

// The standard normal quantile function at p (0 < p < 1): Newton steps on
// Phi(x) - p, kept inside a shrinking bracket (bisecting when a step leaves
// it, as in the tails where the first guess is poor); exact to double precision.
double normal_quantile(double p) {
  double lo = -40, hi = 40, x = 0;
  for (int it = 0; it < 200; ++it) {
    double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    if (cdf < p) lo = x; else hi = x;
    double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    double next = x - (cdf - p) / pdf;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::fabs(next - x) < 1e-13) return next;
    x = next;
  }
  return x;
}

// Values of mean + stddev * N(0, 1) at the 65536 midpoint quantiles: a 16-bit
// uniform picks one, so one 64-bit hash gives four normal samples.
// The E4M3 code nearest to v (|v| <= 448; ties to the even code): the 127
// non-negative values are increasing in their codes (OCP OFP8 E4M3).
uint8_t to_e4m3(float v) {
  auto value = [](int code) {
    const int e = code >> 3, m = code & 7;
    return e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.0f + m / 8.0f, e - 7);
  };
  const float a = std::fabs(v);
  int code = 0;
  while (code < 0x7e && value(code + 1) <= a) ++code;
  if (code < 0x7e) {
    const float lo = a - value(code), hi = value(code + 1) - a;
    if (hi < lo || (hi == lo && (code & 1))) ++code;
  }
  return static_cast<uint8_t>(v < 0 && code ? code | 0x80 : code);
}

struct NormalTable {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  std::vector<uint8_t> e4m3;  // f32 / kRandomFp8Scale
  NormalTable(float mean, float stddev) : f32(65536), bf16(65536), e4m3(65536) {
    for (int j = 0; j < 65536; ++j) {
      f32[j] = mean + stddev * static_cast<float>(normal_quantile((j + 0.5) / 65536.0));
      bf16[j] = to_bf16(f32[j]);
      e4m3[j] = to_e4m3(std::clamp(f32[j] / kRandomFp8Scale, -448.0f, 448.0f));
    }
  }
};

const NormalTable& table_for(bool norm_weight) {
  static const NormalTable weights(0.0f, 0.02f);  // transformers' initializer_range for Qwen3-VL
  static const NormalTable norms(1.0f, 0.02f);
  return norm_weight ? norms : weights;
}

bool is_norm_weight(const std::string& name) {
  // "...input_layernorm.weight", "...q_norm.weight", "...norm1.weight", "...merger.norm.weight"
  const std::string suffix = ".weight";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  std::string stem = name.substr(0, name.size() - suffix.size());
  std::string last = stem.substr(stem.rfind('.') + 1);
  return last.find("norm") != std::string::npos;
}

bool is_fp8_scale(const std::string& name) {
  const std::string suffix = "_scale_inv";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A text decoder linear's weight (attention projections, MLP and expert
// matrices): what an FP8 checkpoint quantizes. The router (mlp.gate) stays.
bool is_fp8_linear(const std::string& name) {
  const std::string suffix = "_proj.weight";
  return name.rfind("model.language_model.layers.", 0) == 0 && name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The checkpoint's tensors, FP8 ones with their block scales (sorted by name).
std::vector<TensorInfo> random_model_tensors(const ModelConfig& config, bool fp8) {
  std::vector<TensorInfo> tensors =
      qwen3vl_checkpoint_tensors(config, DType::BF16, fp8 ? ExpertLayout::PerExpert : ExpertLayout::Fused);
  if (!fp8) return tensors;
  const size_t n = tensors.size();
  for (size_t i = 0; i < n; ++i) {
    TensorInfo& t = tensors[i];
    if (!is_fp8_linear(t.name)) continue;
    t.dtype = DType::F8_E4M3;
    // The 128×128 block grid (config.json's weight_block_size).
    tensors.push_back({t.name + "_scale_inv", DType::BF16, {(t.shape[0] + 127) / 128, (t.shape[1] + 127) / 128}});
  }
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  return tensors;
}

// Element i takes 16-bit lane i % 4 of hash(key, i / 4).
template <typename T>
void fill_range(const T* table, uint64_t key, uint64_t first, size_t count, T* out) {
  uint64_t i = first;
  const uint64_t end = first + count;
  auto hash = [key](uint64_t block) { return mix64(key + block * 0x9e3779b97f4a7c15ull); };
  for (; i < end && (i & 3); ++i) *out++ = table[(hash(i >> 2) >> (16 * (i & 3))) & 0xffff];
  for (; i + 4 <= end; i += 4) {
    uint64_t h = hash(i >> 2);
    out[0] = table[h & 0xffff];
    out[1] = table[(h >> 16) & 0xffff];
    out[2] = table[(h >> 32) & 0xffff];
    out[3] = table[h >> 48];
    out += 4;
  }
  for (; i < end; ++i) *out++ = table[(hash(i >> 2) >> (16 * (i & 3))) & 0xffff];
}

void fill_bytes(DType dtype, const NormalTable& table, uint64_t key, uint64_t first, size_t count, uint8_t* out) {
  if (dtype == DType::F8_E4M3)
    fill_range(table.e4m3.data(), key, first, count, out);
  else if (dtype == DType::BF16)
    fill_range(table.bf16.data(), key, first, count, reinterpret_cast<uint16_t*>(out));
  else
    fill_range(table.f32.data(), key, first, count, reinterpret_cast<float*>(out));
}

}  // namespace

void fill_random_weights(const TensorInfo& t, uint64_t seed, size_t byte_offset, std::span<uint8_t> out, int threads) {
  if (t.dtype != DType::BF16 && t.dtype != DType::F32 && t.dtype != DType::F8_E4M3)
    fail("random weights: tensor '", t.name, "' has dtype ", dtype_name(t.dtype), " (only BF16, F32 and F8_E4M3)");
  const size_t es = dtype_size(t.dtype);
  if (is_fp8_scale(t.name)) {
    if (t.dtype != DType::BF16) fail("random weights: scale tensor '", t.name, "' must be BF16");
    const uint16_t s = to_bf16(kRandomFp8Scale);
    for (size_t i = 0; i + 1 < out.size(); i += 2) std::memcpy(out.data() + i, &s, 2);
    return;
  }
  const uint64_t key = mix64(seed ^ name_hash(t.name));
  const NormalTable& table = table_for(is_norm_weight(t.name));
  const uint64_t first = byte_offset / es;
  const size_t count = out.size() / es;
  if (threads <= 1 || count < (1u << 16)) {
    fill_bytes(t.dtype, table, key, first, count, out.data());
    return;
  }
  const size_t per = (count + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (int w = 1; w < threads; ++w) {
    size_t b = std::min(count, w * per), e = std::min(count, b + per);
    if (b < e) pool.emplace_back(fill_bytes, t.dtype, std::cref(table), key, first + b, e - b, out.data() + b * es);
  }
  fill_bytes(t.dtype, table, key, first, std::min(count, per), out.data());
  for (auto& th : pool) th.join();
}

RandomModelStats make_random_model(const std::string& out_dir, const std::string& config_json,
                                   const RandomModelOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  json cfg = read_json_file(config_json, "random model: the config");
  if (options.untied) {
    if (!cfg.is_object() || !cfg.contains("text_config") || !cfg["text_config"].is_object())
      fail("random model: the config has no text_config object");
    cfg["tie_word_embeddings"] = false;
    cfg["text_config"]["tie_word_embeddings"] = false;
  }
  if (options.fp8) {
    if (!cfg.is_object()) fail("random model: the config is not a JSON object");
    // As Qwen's -FP8 releases write it (transformers' FineGrainedFP8Config).
    cfg["quantization_config"] = {{"activation_scheme", "dynamic"},
                                  {"fmt", "e4m3"},
                                  {"quant_method", "fp8"},
                                  {"weight_block_size", {128, 128}},
                                  {"modules_to_not_convert", {"lm_head", "model.language_model.embed_tokens", "model.visual"}}};
  }
  if (options.text_layers > 0) {
    if (!cfg.is_object() || !cfg.contains("text_config") || !cfg["text_config"].is_object())
      fail("random model: the config has no text_config object");
    json& t = cfg["text_config"];
    const int n = options.text_layers;
    if (!t.contains("num_hidden_layers") || !t["num_hidden_layers"].is_number_integer() ||
        t["num_hidden_layers"].get<int>() < n)
      fail("random model: --layers ", n, " is more than text_config.num_hidden_layers (",
           t.value("num_hidden_layers", json()).dump(), ")");
    t["num_hidden_layers"] = n;
    if (t.contains("mlp_only_layers") && t["mlp_only_layers"].is_array()) {
      json kept = json::array();
      for (const json& i : t["mlp_only_layers"])
        if (i.is_number_integer() && i.get<int>() < n) kept.push_back(i);
      t["mlp_only_layers"] = kept;
    }
    if (t.contains("layer_types") && t["layer_types"].is_array() && t["layer_types"].size() > size_t(n))
      t["layer_types"].erase(t["layer_types"].begin() + n, t["layer_types"].end());
  }
  const bool rewritten = options.untied || options.fp8 || options.text_layers > 0;
  const std::string config_text = rewritten ? cfg.dump(2) + "\n" : config_json;
  const fs::path dir(out_dir);
  const ModelConfig config = parse_model_config(config_text, (dir / "config.json").string());

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(out_dir, ": cannot create the folder: ", ec.message());
  {
    std::FILE* f = std::fopen((dir / "config.json").c_str(), "wb");
    if (!f) fail((dir / "config.json").string(), ": cannot create");
    size_t n = std::fwrite(config_text.data(), 1, config_text.size(), f);
    if (std::fclose(f) != 0 || n != config_text.size()) fail((dir / "config.json").string(), ": write failed");
  }

  // The tokenizer side is the real model's; the preprocessor is made to agree
  // with this config's vision sizes.
  const fs::path like(options.like_dir);
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "chat_template.json", "chat_template.jinja",
                           "generation_config.json"}) {
    fs::path from = like / name;
    if (!fs::is_regular_file(from, ec)) {
      if (std::string(name) == "tokenizer.json") fail(from.string(), ": missing (--like must name a model folder)");
      continue;
    }
    fs::copy_file(from, dir / name, fs::copy_options::overwrite_existing, ec);
    if (ec) fail((dir / name).string(), ": cannot copy from ", from.string(), ": ", ec.message());
  }
  // Both processors' files (images, videos) follow this config's patch sizes;
  // the video one is optional in --like, as in checkpoints before Qwen3-VL.
  for (const char* name : {"preprocessor_config.json", "video_preprocessor_config.json"}) {
    const fs::path from = like / name;
    const fs::path to = dir / name;
    if (!fs::is_regular_file(from, ec)) {
      if (std::string(name) == "preprocessor_config.json")
        fail(from.string(), ": missing (--like must name a model folder)");
      continue;
    }
    json pre = read_json_file(read_file(from.string()), from.string());
    pre["patch_size"] = config.vision.patch_size;
    pre["merge_size"] = config.vision.spatial_merge_size;
    pre["temporal_patch_size"] = config.vision.temporal_patch_size;
    std::string text = pre.dump(2) + "\n";
    std::FILE* f = std::fopen(to.c_str(), "wb");
    if (!f) fail(to.string(), ": cannot create");
    size_t n = std::fwrite(text.data(), 1, text.size(), f);
    if (std::fclose(f) != 0 || n != text.size()) fail(to.string(), ": write failed");
  }

  const std::vector<TensorInfo> tensors = random_model_tensors(config, options.fp8);
  const int threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  WriteOptions wo;
  wo.chunk_bytes = options.chunk_bytes;
  const std::string weights = (dir / "model.safetensors").string();
  fs::remove(dir / "model.safetensors.index.json", ec);  // would shadow the new file
  write_safetensors(weights, tensors, [&](size_t i, size_t off, std::span<uint8_t> out) {
    fill_random_weights(tensors[i], options.seed, off, out, threads);
  }, wo);

  RandomModelStats stats;
  stats.tensors = tensors.size();
  for (const TensorInfo& t : tensors)
    if (!is_fp8_scale(t.name)) stats.parameters += t.numel();
  stats.file_bytes = fs::file_size(weights);
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace qvl
