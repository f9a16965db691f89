#include "model/weight_prefetch.h"

#include <algorithm>

namespace qvl {
namespace {

// Small enough that a destructor waits only a few milliseconds for the call
// in flight; large enough that the per-call cost vanishes.
constexpr size_t kChunkBytes = size_t(8) << 20;

}  // namespace

std::vector<WeightPrefetch::Range> WeightPrefetch::in_place_ranges(const SafeTensors& st, const ModelWeights& w) {
  std::vector<Range> out;
  auto add = [&](const WeightMatrix& m) {
    if (m.data() && m.bytes() > 0 && st.contains(m.data())) out.push_back({m.data(), m.bytes()});
  };
  const VisionWeights& v = w.vision;
  add(v.patch_embed.w);
  for (size_t b = 0; b < v.blocks.size(); ++b) {
    const VisionBlockWeights& bw = v.blocks[b];
    for (const Linear* l : {&bw.qkv, &bw.proj, &bw.fc1, &bw.fc2}) add(l->w);
    // The DeepStack mergers run right after their block; which block that is
    // lives in the config, and they are small: fetch them with the first.
    if (b == 0)
      for (const MergerWeights& m : v.deepstack) add(m.fc1.w), add(m.fc2.w);
  }
  add(v.merger.fc1.w);
  add(v.merger.fc2.w);
  for (const TextLayerWeights& l : w.text.layers)
    for (const WeightMatrix* x : l.matrices()) add(*x);
  add(w.text.lm_head);
  return out;
}

WeightPrefetch::WeightPrefetch(const SafeTensors& st, const ModelWeights& w) : ranges_(in_place_ranges(st, w)) {
  for (const Range& r : ranges_) total_ += r.bytes;
  thread_ = std::thread([this, &st] { run(st); });
}

WeightPrefetch::~WeightPrefetch() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void WeightPrefetch::run(const SafeTensors& st) {
  for (const Range& r : ranges_) {
    const auto* p = static_cast<const uint8_t*>(r.data);
    for (size_t off = 0; off < r.bytes; off += kChunkBytes) {
      if (stop_.load(std::memory_order_relaxed)) return;
      const size_t n = std::min(kChunkBytes, r.bytes - off);
      st.populate(p + off, n);
      progress_.fetch_add(n, std::memory_order_relaxed);
    }
  }
  done_.store(true, std::memory_order_release);
}

}  // namespace qvl
