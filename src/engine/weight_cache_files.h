// The weight cache (model/weight_cache.h) as the front ends manage it apart
// from running a model: filled ahead of time (qvl quantize), so a later start
// maps the converted q8/q4 matrices instead of converting them, and listed
// (qvl models).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "model/weight_cache_options.h"
#include "util/formats.h"

namespace qvl {

// What quantize_into_cache did.
struct CacheFill {
  enum class Outcome { Written, AlreadyCached, WriteFailed };
  Outcome outcome = Outcome::Written;
  std::string path;         // the cache file, or the one that could not be written
  size_t matrix_bytes = 0;  // the converted matrices
};

// Loads the checkpoint in `model_dir` as `format` (q8 or q4) on `threads`
// threads (0: the physical cores): converted and written to the cache, or
// mapped (and so verified) from the file already there. `progress` sees the
// conversion (bytes done, total).
CacheFill quantize_into_cache(const std::string& model_dir, WeightFormat format, const WeightCacheOptions& cache,
                              int threads, std::function<void(size_t, size_t)> progress);

struct WeightCacheListing {
  std::string dir;  // the options' folder, or the default one
  std::vector<WeightCacheFile> files;
};
WeightCacheListing list_weight_cache(const WeightCacheOptions& cache);

}  // namespace qvl
