#include "model/model.h"

#include <filesystem>
#include <iostream>

namespace qvl {

std::unique_ptr<Model> Model::load(const std::string& dir, const ModelLoadOptions& options, ThreadPool& pool) {
  return load(ModelFolder::open(dir), options, pool);
}

std::unique_ptr<Model> Model::load(ModelFolder folder, const ModelLoadOptions& options, ThreadPool& pool) {
  SafeTensors st = SafeTensors::open(folder.weights_path);
  std::unique_ptr<Model> m(new Model(std::move(folder), std::move(st)));
  WeightLoadOptions wo;
  wo.format = options.format;
  // bf16: Fast where it is faster (matmul_fast_bf16_pays), else the exact
  // kernel: on this CPU that is the faster of the two. (q8/q4 products
  // ignore it; their attention reads it, attention_precision in weights.h.)
  const bool fast_bf16 = options.precision == MatmulPrecision::Fast && options.format == WeightFormat::BF16;
  const bool pays = fast_bf16 && options.fast_bf16_pays.value_or(matmul_fast_bf16_pays());
  wo.precision = fast_bf16 && !pays ? std::optional(MatmulPrecision::Exact) : options.precision;
  wo.pool = &pool;
  wo.progress = options.progress;
  m->format_ = options.format;
  m->precision_ = options.precision.value_or(MatmulPrecision::Exact);
  m->fast_matmul_ = pays && matmul_fast_bf16_supported();
  const bool quantized = options.format == WeightFormat::Q8 || options.format == WeightFormat::Q4;
  if (quantized && options.weight_cache) {
    std::ostream& log = options.log ? *options.log : std::cerr;
    WeightCache cache(*options.weight_cache);
    const std::string key = weight_cache_key(m->folder_, m->st_, options.format);
    std::optional<MatrixTable> cached = cache.open(key, options.format, &pool, log);
    MatrixTable converted;
    wo.reuse = cached ? &*cached : nullptr;
    wo.converted = &converted;
    m->weights_ = ModelWeights::load(m->st_, m->folder_.config, wo);
    m->cache_use_.path = cache.path_for(key);
    if (converted.empty()) {
      m->cache_use_.outcome = WeightCacheUse::Outcome::Loaded;
    } else {
      // Converted here (no usable file, or one lacking some matrices): keep
      // every quantized matrix of the model, reused ones included.
      if (cached) converted.insert(cached->begin(), cached->end());
      try {
        std::error_code ec;
        const std::filesystem::path source = std::filesystem::weakly_canonical(m->folder_.dir, ec);
        cache.store(key, options.format, ec ? m->folder_.dir : source.string(), converted);
        m->cache_use_.outcome = WeightCacheUse::Outcome::Written;
      } catch (const std::exception& e) {
        // The model is loaded; only the next start is slower.
        log << "qvl: warning: cannot write the weight cache: " << e.what() << "\n";
        m->cache_use_.outcome = WeightCacheUse::Outcome::WriteFailed;
      }
    }
  } else {
    m->weights_ = ModelWeights::load(m->st_, m->folder_.config, wo);
  }
  m->vision_ = std::make_unique<VisionEncoder>(m->folder_.config.vision, m->weights_.vision);
  m->text_ = std::make_unique<TextDecoder>(m->folder_.config.text, m->weights_.text, options.max_batch);
  if (options.prefetch) m->prefetch_weights();
  return m;
}

void Model::prefetch_weights() {
  if (!prefetch_) prefetch_ = std::make_unique<WeightPrefetch>(st_, weights_);
}

}  // namespace qvl
