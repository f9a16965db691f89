// Background prefault of the weights a model reads in place from the mmap'd
// checkpoint. A page-cache-warm checkpoint is mapped lazily: without this the
// first image and the first prefill take every page of the weights as a
// first-touch fault (~0.25 s of kernel time per 4 GB, paid inside parallel
// sections where the other threads wait at the barrier). One populate call
// per chunk on a spare thread maps them instead, once the caller is ready
// (Model::prefetch_weights): while a server waits for its first request, or
// while the vision encoder runs. Not during load: it slowed engine creation
// (tokenizer, KV caches) from 0.21 to 0.49 s. Ranges go in the order a request
// reads them (vision tower, text layers in order, output head), so compute
// rarely overtakes it.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "io/safetensors.h"
#include "model/weights.h"

namespace qvl {

class WeightPrefetch {
 public:
  // Starts the thread. `st` and `w` must outlive this object.
  WeightPrefetch(const SafeTensors& st, const ModelWeights& w);
  ~WeightPrefetch();  // stops between chunks and joins
  WeightPrefetch(const WeightPrefetch&) = delete;
  WeightPrefetch& operator=(const WeightPrefetch&) = delete;

  bool done() const { return done_.load(std::memory_order_acquire); }
  size_t bytes_total() const { return total_; }
  size_t bytes_done() const { return progress_.load(std::memory_order_relaxed); }

  // The in-place (still mapped) matrices of `w` in the order a request reads
  // them. Converted (owned) matrices are left out, so a q8/q4 model does not
  // pull its bf16 source back into memory.
  struct Range {
    const void* data;
    size_t bytes;
  };
  static std::vector<Range> in_place_ranges(const SafeTensors& st, const ModelWeights& w);

 private:
  void run(const SafeTensors& st);

  std::vector<Range> ranges_;
  size_t total_ = 0;
  std::atomic<size_t> progress_{0};
  std::atomic<bool> stop_{false}, done_{false};
  std::thread thread_;
};

}  // namespace qvl
