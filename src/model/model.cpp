#include "model/model.h"

namespace qvl {

std::unique_ptr<Model> Model::load(const std::string& dir, const ModelLoadOptions& options, ThreadPool& pool) {
  return load(ModelFolder::open(dir), options, pool);
}

std::unique_ptr<Model> Model::load(ModelFolder folder, const ModelLoadOptions& options, ThreadPool& pool) {
  SafeTensors st = SafeTensors::open(folder.weights_path);
  std::unique_ptr<Model> m(new Model(std::move(folder), std::move(st)));
  WeightLoadOptions wo;
  wo.format = options.format;
  // Fast where it is faster (matmul_fast_bf16_pays), else the exact kernel:
  // on this CPU that is the faster of the two.
  // (Measured only for bf16 weights: q8/q4 read the setting for their
  // attention alone, attention_precision in weights.h.)
  const bool fast_bf16 = options.precision == MatmulPrecision::Fast && options.format == WeightFormat::BF16;
  wo.precision = fast_bf16 && !matmul_fast_bf16_pays() ? MatmulPrecision::Exact : options.precision;
  wo.pool = &pool;
  wo.progress = options.progress;
  m->format_ = options.format;
  m->precision_ = options.precision;
  m->weights_ = ModelWeights::load(m->st_, m->folder_.config, wo);
  m->vision_ = std::make_unique<VisionEncoder>(m->folder_.config.vision, m->weights_.vision);
  m->text_ = std::make_unique<TextDecoder>(m->folder_.config.text, m->weights_.text, options.max_batch);
  if (options.prefetch) m->prefetch_weights();
  return m;
}

void Model::prefetch_weights() {
  if (!prefetch_) prefetch_ = std::make_unique<WeightPrefetch>(st_, weights_);
}

}  // namespace qvl
