#include "engine/weight_cache_files.h"

#include "model/model.h"
#include "model/weight_cache.h"
#include "ops/thread_pool.h"

namespace qvl {

CacheFill quantize_into_cache(const std::string& model_dir, WeightFormat format, const WeightCacheOptions& cache,
                              int threads, std::function<void(size_t, size_t)> progress) {
  ThreadPool pool(threads > 0 ? threads : physical_cores());
  ModelLoadOptions mo;
  mo.format = format;
  mo.weight_cache = cache;
  mo.progress = std::move(progress);
  std::unique_ptr<Model> m = Model::load(model_dir, mo, pool);
  const WeightCacheUse& use = m->weight_cache_use();
  CacheFill fill;
  fill.path = use.path;
  fill.matrix_bytes = m->weights().matrix_bytes;
  fill.outcome = use.outcome == WeightCacheUse::Outcome::WriteFailed ? CacheFill::Outcome::WriteFailed
                 : use.outcome == WeightCacheUse::Outcome::Written   ? CacheFill::Outcome::Written
                                                                     : CacheFill::Outcome::AlreadyCached;
  return fill;
}

WeightCacheListing list_weight_cache(const WeightCacheOptions& options) {
  const WeightCache cache(options);
  return {cache.dir(), cache.list()};
}

}  // namespace qvl
