// A loaded Qwen3-VL model: the folder (configs, template, tokenizer path), the
// mapped checkpoint, the bound weights and the two towers.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "io/model_config.h"
#include "io/safetensors.h"
#include "model/text_decoder.h"
#include "model/vision_encoder.h"
#include "model/weight_cache.h"
#include "model/weight_prefetch.h"
#include "model/weights.h"
#include "ops/matmul.h"

namespace qvl {

struct ModelLoadOptions {
  WeightFormat format = WeightFormat::BF16;
  // Prefill/vision matmul precision of BF16 weights (matmul.h; no effect on
  // f32/q8/q4 products, nor where the CPU lacks AVX512-BF16) and of the
  // attention beside them; unset: WeightLoadOptions::precision's default.
  std::optional<MatmulPrecision> precision;
  // Whether Fast bf16 products pay on this CPU; unset: measured
  // (matmul_fast_bf16_pays). Tests set it to hold the rule to a decision
  // whatever their CPU measures.
  std::optional<bool> fast_bf16_pays;
  int64_t max_batch = 512;  // prefill chunk: bounds the decoder's scratch buffers
  std::function<void(size_t, size_t)> progress;  // weight conversion progress (bytes done, total)
  // Start prefetch_weights() at the end of load. Off by default: the thread
  // competes with whatever the caller still does to get ready (tokenizer,
  // KV caches: +0.2 s of load measured), so callers start it when ready.
  bool prefetch = false;
  // q8/q4 weights: map them from this weight cache when it holds them for
  // this checkpoint, else convert and write them there. Unset: no cache.
  std::optional<WeightCacheOptions> weight_cache;
  std::ostream* log = nullptr;  // weight cache warnings; nullptr: std::cerr
};

// What the weight cache did at a load.
struct WeightCacheUse {
  enum class Outcome { Off, Loaded, Written, WriteFailed };
  Outcome outcome = Outcome::Off;
  std::string path;  // the cache file (Loaded/Written) or the one that could not be written
};

class Model {
 public:
  static std::unique_ptr<Model> load(const std::string& dir, const ModelLoadOptions& options, ThreadPool& pool);
  // For tests: a model from an already parsed folder.
  static std::unique_ptr<Model> load(ModelFolder folder, const ModelLoadOptions& options, ThreadPool& pool);

  const ModelFolder& folder() const { return folder_; }
  const ModelConfig& config() const { return folder_.config; }
  const ModelWeights& weights() const { return weights_; }
  const VisionEncoder& vision() const { return *vision_; }
  TextDecoder& text() { return *text_; }
  WeightFormat format() const { return format_; }
  MatmulPrecision precision() const { return precision_; }  // as asked for at load
  // Whether prefill/vision products actually run the fast bf16 kernel: Fast
  // asked for, BF16 weights, a CPU that has it (matmul_fast_bf16_supported)
  // and where it beats the exact kernel (ModelLoadOptions::fast_bf16_pays).
  bool fast_matmul() const { return fast_matmul_; }
  size_t file_bytes() const { return st_.total_bytes(); }
  // Rows `ids` of the output head as the checkpoint stores them, in f32
  // [ids, hidden]: lm_head.weight, else the embedding table when tied (the
  // reranker's W[yes] − W[no], exact whatever format the loaded head has).
  // Throws when the checkpoint has no head (untied, no lm_head.weight).
  std::vector<float> head_rows(std::span<const int32_t> ids) const;
  const WeightCacheUse& weight_cache_use() const { return cache_use_; }
  // Maps the in-place (mmap'd) weights into the page tables on a background
  // thread (weight_prefetch.h), so the first request does not take them as
  // page faults. Call once the caller is otherwise ready (end of engine
  // creation); later calls do nothing. Not thread-safe against itself.
  void prefetch_weights();
  // Whether prefetch_weights() has mapped every in-place weight; true when it
  // was never started.
  bool weights_resident() const { return !prefetch_ || prefetch_->done(); }

 private:
  Model(ModelFolder folder, SafeTensors st) : folder_(std::move(folder)), st_(std::move(st)) {}
  ModelFolder folder_;
  SafeTensors st_;
  ModelWeights weights_;
  WeightFormat format_ = WeightFormat::BF16;
  MatmulPrecision precision_ = MatmulPrecision::Exact;
  bool fast_matmul_ = false;
  WeightCacheUse cache_use_;
  std::unique_ptr<VisionEncoder> vision_;
  std::unique_ptr<TextDecoder> text_;
  std::unique_ptr<WeightPrefetch> prefetch_;  // last: stopped before the mapping goes
};

}  // namespace qvl
