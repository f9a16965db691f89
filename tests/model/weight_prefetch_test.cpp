// Background prefault of the mapped weights: it covers exactly the matrices
// read in place (bf16 views), none that were converted at load, and finishes.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "golden.h"
#include "model/model.h"
#include "model/weight_prefetch.h"
#include "tiny_model.h"

namespace qvl {
namespace {

size_t wait_done(const WeightPrefetch& p) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!p.done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return p.bytes_done();
}

// Every matrix the model reads.
std::vector<const WeightMatrix*> all_matrices(const ModelWeights& w) {
  std::vector<const WeightMatrix*> out{&w.vision.patch_embed.w};
  for (const auto& b : w.vision.blocks)
    for (const Linear* l : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) out.push_back(&l->w);
  for (const auto& m : w.vision.deepstack) out.push_back(&m.fc1.w), out.push_back(&m.fc2.w);
  out.push_back(&w.vision.merger.fc1.w);
  out.push_back(&w.vision.merger.fc2.w);
  for (const auto& l : w.text.layers)
    for (const WeightMatrix* x : l.matrices()) out.push_back(x);
  out.push_back(&w.text.lm_head);
  return out;
}

TEST(WeightPrefetch, CoversTheInPlaceMatricesOnly) {
  const SafeTensors st = SafeTensors::open(golden::model_dir());
  for (WeightFormat f : {WeightFormat::BF16, WeightFormat::Q8}) {
    WeightLoadOptions lo;
    lo.format = f;
    const ModelWeights w = ModelWeights::load(st, golden::tiny(f).config(), lo);
    const auto ranges = WeightPrefetch::in_place_ranges(st, w);
    size_t bytes = 0, in_place = 0;
    for (const auto& r : ranges) {
      EXPECT_TRUE(st.contains(r.data));
      bytes += r.bytes;
    }
    for (const WeightMatrix* m : all_matrices(w)) in_place += st.contains(m->data()) ? 1 : 0;
    EXPECT_EQ(ranges.size(), in_place) << weight_format_name(f);
    // bf16 reads the checkpoint in place; q8 converts every matrix, so
    // nothing of the bf16 source is pulled back in.
    if (f == WeightFormat::BF16) {
      EXPECT_GT(in_place, 0u);
    } else {
      EXPECT_TRUE(ranges.empty());
    }
    WeightPrefetch p(st, w);
    EXPECT_EQ(p.bytes_total(), bytes);
    EXPECT_EQ(wait_done(p), bytes);
    EXPECT_TRUE(p.done());
  }
}

TEST(WeightPrefetch, PopulateIgnoresMemoryOutsideTheMapping) {
  const SafeTensors st = SafeTensors::open(golden::model_dir());
  std::vector<uint8_t> other(4096);
  EXPECT_FALSE(st.contains(other.data()));
  EXPECT_EQ(st.populate(other.data(), other.size()), 0u);
  const TensorView& t = st.tensors().begin()->second;
  EXPECT_TRUE(st.contains(t.data));
  EXPECT_EQ(st.populate(t.data, t.nbytes), t.nbytes);
}

TEST(WeightPrefetch, ModelReportsResidentWeights) {
  ModelLoadOptions o;
  auto m = Model::load(golden::model_dir(), o, golden::pool());
  EXPECT_TRUE(m->weights_resident());  // not started: nothing pending
  m->prefetch_weights();
  m->prefetch_weights();  // a second call changes nothing
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!m->weights_resident() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(m->weights_resident());
  o.prefetch = true;
  m = Model::load(golden::model_dir(), o, golden::pool());
  m.reset();  // destroyed while it may still run: stops and joins
}

}  // namespace
}  // namespace qvl
