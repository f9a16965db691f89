#include "model/model.h"

#include <cstring>
#include <filesystem>
#include <iostream>

#include "ops/ops.h"
#include "util/error.h"

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

std::vector<float> Model::head_rows(std::span<const int32_t> ids) const {
  const Embedding& embed = weights_.text.embed;
  const int64_t h = embed.dim;
  std::vector<float> out(ids.size() * h);
  for (int32_t id : ids)
    if (id < 0 || id >= embed.vocab) fail("token id ", id, " outside the vocabulary of ", embed.vocab);
  if (const TensorView* head = st_.find("lm_head.weight")) {
    if (head->dtype != DType::BF16 && head->dtype != DType::F32)
      fail("lm_head.weight has dtype ", dtype_name(head->dtype), "; qvl reads it as BF16 or F32");
    const size_t elem = dtype_size(head->dtype);
    for (size_t i = 0; i < ids.size(); ++i) {
      const uint8_t* row = head->data + static_cast<size_t>(ids[i]) * h * elem;
      if (head->dtype == DType::F32) {
        std::memcpy(&out[i * h], row, h * sizeof(float));
      } else {
        std::vector<uint16_t> bits(h);
        std::memcpy(bits.data(), row, h * 2);  // the mapping may be unaligned
        bf16_to_f32(bits.data(), &out[i * h], h);
      }
    }
    return out;
  }
  if (!folder_.config.tie_word_embeddings)
    fail("the checkpoint has untied embeddings and no lm_head.weight: it has no output head, so it cannot "
         "score (a reranker needs lm_head rows 'yes' and 'no'); it can only compute embeddings");
  for (size_t i = 0; i < ids.size(); ++i) {
    if (embed.bf16) embed_bf16(embed.bf16, h, &ids[i], 1, &out[i * h]);
    else std::memcpy(&out[i * h], embed.f32 + int64_t{ids[i]} * h, h * sizeof(float));
  }
  return out;
}

void Model::prefetch_weights() {
  if (!prefetch_) prefetch_ = std::make_unique<WeightPrefetch>(st_, weights_);
}

}  // namespace qvl
