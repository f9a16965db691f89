// How the weight cache (model/weight_cache.h) is used; apart so the engine's
// parameters name it without the cache's implementation.
#pragma once

#include <cstdint>
#include <string>

namespace qvl {

struct WeightCacheOptions {
  std::string dir;      // empty: default_weight_cache_dir()
  uint64_t max_bytes = uint64_t{64} << 30;  // the folder's bound; least recently used files go first
};

}  // namespace qvl
