// How the weight cache (model/weight_cache.h) is used, and its files as
// listed; apart so the engine's parameters and the front ends name them
// without the cache's implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>

namespace qvl {

struct WeightCacheOptions {
  std::string dir;      // empty: default_weight_cache_dir()
  uint64_t max_bytes = uint64_t{64} << 30;  // the folder's bound; least recently used files go first
};

// A cache file as `qvl models` lists it (its header and table only).
struct WeightCacheFile {
  std::string path;
  uint64_t bytes = 0;
  std::time_t last_used = 0;  // the file's mtime: set when written and at each use
  bool valid = false;         // header and table check (data checksums are not read)
  std::string problem;        // why not, when !valid
  std::string key, format, source;
  size_t matrices = 0;
};

}  // namespace qvl
