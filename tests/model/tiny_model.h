// The fixture checkpoint loaded once per weight format for all tests of the
// binary, with one shared 2-thread pool.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "golden.h"
#include "model/model.h"
#include "ops/thread_pool.h"

namespace qvl::golden {

inline ThreadPool& pool() {
  static ThreadPool p(2);
  return p;
}

// The checkpoint in `dir`, once per format. The folder is a view and the
// dense model's an overload, not a default argument: a caller's temporary
// string is never a reference argument beside the returned reference.
inline Model& tiny(WeightFormat format, std::string_view dir) {
  static std::map<std::pair<std::string, WeightFormat>, std::unique_ptr<Model>> models;
  auto& m = models[{std::string(dir), format}];
  if (!m) {
    ModelLoadOptions o;
    o.format = format;
    o.max_batch = 64;  // smaller than most prompts, so chunked prefill is exercised
    m = Model::load(std::string(dir), o, pool());
  }
  return *m;
}

// The dense tiny model.
inline Model& tiny(WeightFormat format) { return tiny(format, model_dir()); }

// The mixture-of-experts fixture checkpoint (tiny-qwen3vl-moe).
inline Model& tiny_moe(WeightFormat format) { return tiny(format, moe_model_dir()); }

inline std::vector<ImageGrid> grids_of(const Tensor& thw) {
  std::vector<ImageGrid> g;
  for (int64_t r = 0; r < thw.shape[0]; ++r)
    g.push_back({static_cast<int>(thw.i[3 * r]), static_cast<int>(thw.i[3 * r + 1]), static_cast<int>(thw.i[3 * r + 2])});
  return g;
}

inline std::vector<int32_t> ids_of(const Tensor& t) { return std::vector<int32_t>(t.i.begin(), t.i.end()); }

}  // namespace qvl::golden
