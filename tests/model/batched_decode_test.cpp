// Batched decode (TextDecoder::forward_batch) against one sequence at a time:
// several golden prompts, each prefilled into its own cache, then decoded
// greedily together; every step's hidden state and logits must equal the
// single-sequence decode bit for bit. Also: prefill cut into chunks of other
// sizes (each at least 16 tokens) gives the same bits, which the engine
// relies on when it shortens prefill chunks while other sequences decode.
#include <gtest/gtest.h>

#include <cstring>

#include "golden.h"
#include "tiny_model.h"
#include "util/error.h"

namespace qvl {
namespace {

// A golden prompt prepared for the decoder: ids, positions, vision features.
struct Prompt {
  std::vector<int32_t> ids;
  PromptPositions positions;
  VisionFeatures vision;
  std::vector<int64_t> rows;
};

Prompt prepare(Model& model, const nlohmann::json& p, const std::string& dir) {
  Prompt r;
  r.ids = golden::ids_of(golden::file(p["file"], dir)["input_ids"]);
  std::vector<VisionInput> images;
  std::vector<ImageGrid> grids;
  for (const auto& name : p["images"]) {
    const golden::File& v = golden::file(golden::manifest()["images"][name.get<std::string>()]["file"]);
    images.push_back({v["pixel_values"].f.data(), golden::grids_of(v["image_grid_thw"])[0]});
    grids.push_back(images.back().grid);
  }
  const ModelConfig& c = model.config();
  r.vision = model.vision().encode(images, golden::pool());
  r.positions = rope_index(r.ids, grids, c.image_token_id, c.vision.spatial_merge_size);
  r.rows = image_rows(r.ids, c.image_token_id);
  return r;
}

// Prefills `p` into `cache` in chunks of `chunk` tokens, the last one taking
// a rest under 16 tokens (the engine's rule, engine.cpp prefill_piece);
// returns the logits of the last prompt token.
std::vector<float> prefill(Model& model, const Prompt& p, KvCache& cache, int64_t chunk) {
  TextDecoder& text = model.text();
  const int64_t n = static_cast<int64_t>(p.ids.size());
  for (int64_t at = 0, len = 0; at < n; at += len) {
    len = std::min(chunk, n - at);
    if (n - at - len < 16) len = n - at;
    text.forward({p.ids.data() + at, p.positions.pos.data() + at, len, p.rows.data() + at, &p.vision}, cache,
                 golden::pool());
  }
  std::vector<float> logits(model.config().text.vocab_size);
  text.logits(text.last_hidden(), 1, logits.data(), golden::pool());
  return logits;
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

struct Case {
  WeightFormat format;
  KvType kv;
  bool moe = false;  // the mixture-of-experts checkpoint and its prompts
};

class BatchedDecode : public ::testing::TestWithParam<Case> {
 protected:
  Model& model() const {
    return GetParam().moe ? golden::tiny_moe(GetParam().format) : golden::tiny(GetParam().format);
  }
  const nlohmann::json& prompts() const {
    return GetParam().moe ? golden::moe_manifest()["prompts"] : golden::manifest()["prompts"];
  }
  std::string dir() const { return GetParam().moe ? "golden-moe" : "golden"; }
};

TEST_P(BatchedDecode, EqualsSingleSequenceBitForBit) {
  Model& model = this->model();
  TextDecoder& text = model.text();
  const int64_t hid = model.config().text.hidden_size, vocab = model.config().text.vocab_size;
  std::vector<Prompt> prompts;
  for (const auto& p : this->prompts()) prompts.push_back(prepare(model, p, dir()));
  const size_t b = prompts.size();
  ASSERT_GE(b, 3u);
  constexpr int kSteps = 6;

  // Reference: each sequence alone, [b][step] hidden and logits.
  std::vector<std::vector<std::vector<float>>> want_h(b), want_l(b);
  for (size_t s = 0; s < b; ++s) {
    KvCache cache = text.make_cache(512, GetParam().kv);
    std::vector<float> logits = prefill(model, prompts[s], cache, text.max_batch());
    for (int step = 0; step < kSteps; ++step) {
      const int32_t tok = static_cast<int32_t>(golden::argmax(logits.data(), vocab));
      const Pos3 pos = generated_position(cache.size(), prompts[s].positions.rope_delta);
      text.forward({&tok, &pos, 1}, cache, golden::pool());
      text.logits(text.last_hidden(), 1, logits.data(), golden::pool());
      want_h[s].emplace_back(text.last_hidden(), text.last_hidden() + hid);
      want_l[s].push_back(logits);
    }
  }

  // All together; sequence s joins at step s (so batches of 1..b rows).
  std::vector<KvCache> caches;
  std::vector<std::vector<float>> logits(b);
  for (size_t s = 0; s < b; ++s) {
    caches.push_back(text.make_cache(512, GetParam().kv));
    logits[s] = prefill(model, prompts[s], caches[s], text.max_batch());
  }
  std::vector<int> done(b, 0);
  std::vector<float> hidden(b * hid), out(b * vocab);
  for (int round = 0; round < kSteps + static_cast<int>(b); ++round) {
    std::vector<int32_t> ids;
    std::vector<Pos3> pos;
    std::vector<KvCache*> cs;
    std::vector<size_t> who;
    for (size_t s = 0; s < b; ++s) {
      if (static_cast<int>(s) > round || done[s] == kSteps) continue;
      ids.push_back(static_cast<int32_t>(golden::argmax(logits[s].data(), vocab)));
      pos.push_back(generated_position(caches[s].size(), prompts[s].positions.rope_delta));
      cs.push_back(&caches[s]);
      who.push_back(s);
    }
    if (ids.empty()) continue;
    text.forward_batch(ids, pos, cs, golden::pool(), hidden.data());
    text.logits(hidden.data(), static_cast<int64_t>(ids.size()), out.data(), golden::pool());
    for (size_t i = 0; i < who.size(); ++i) {
      const size_t s = who[i];
      SCOPED_TRACE(::testing::Message() << "sequence " << s << " step " << done[s] << " in a batch of " << ids.size());
      ASSERT_TRUE(same_bits(&hidden[i * hid], want_h[s][done[s]].data(), hid));
      ASSERT_TRUE(same_bits(&out[i * vocab], want_l[s][done[s]].data(), vocab));
      logits[s].assign(out.begin() + i * vocab, out.begin() + (i + 1) * vocab);
      ++done[s];
    }
  }
  for (size_t s = 0; s < b; ++s) EXPECT_EQ(done[s], kSteps);
}

TEST_P(BatchedDecode, PrefillChunkSizeDoesNotChangeTheBits) {
  Model& model = this->model();
  TextDecoder& text = model.text();
  for (const auto& p : prompts()) {
    SCOPED_TRACE(p["name"].get<std::string>());
    const Prompt prompt = prepare(model, p, dir());
    KvCache a = text.make_cache(512, GetParam().kv), b = text.make_cache(512, GetParam().kv);
    ASSERT_GE(text.max_batch(), 48 + 15);  // so the decoder does not cut these pieces again
    const std::vector<float> whole = prefill(model, prompt, a, 48);
    for (int64_t chunk : {16, 24, 40}) {
      SCOPED_TRACE(chunk);
      b.set_size(0);
      const std::vector<float> cut = prefill(model, prompt, b, chunk);
      EXPECT_TRUE(same_bits(whole.data(), cut.data(), whole.size()));
    }
  }
}

// Jump-forward's pieces (TextDecoder::forward_pieces): a sequence's token
// followed by the tokens a grammar forces, fed as one causal piece beside
// other sequences' tokens, must give every row the bits of that token decoded
// alone; contexts past 128 and 256 positions cut the rows kernel's attention
// into several chunks, whose layout must follow each query's own length.
TEST_P(BatchedDecode, PiecesEqualTokensDecodedOneAtATime) {
  Model& model = golden::tiny(GetParam().format);
  TextDecoder& text = model.text();
  const int64_t hid = model.config().text.hidden_size, vocab = model.config().text.vocab_size;
  ASSERT_GE(text.exact_rows(), 8);
  // Pieces whose positions straddle a change of the chunk layout (at 141 and
  // at 299 positions a query alone has 71 and 75 positions a chunk, the
  // pieces' last queries 72 and 76), in 8 rows: every format's exact rows.
  const std::vector<int64_t> contexts = {20, 140, 298};
  const std::vector<int64_t> counts = {2, 3, 3};
  std::vector<std::vector<int32_t>> tokens(contexts.size());
  std::vector<KvCache> caches;
  std::vector<std::vector<float>> want_h, want_l;  // per row of the batch below
  for (size_t s = 0; s < contexts.size(); ++s) {
    std::vector<int32_t> ids;
    std::vector<Pos3> pos;
    for (int64_t i = 0; i < contexts[s] + counts[s]; ++i) {
      ids.push_back(static_cast<int32_t>((i * 7919 + s * 104729) % 150000));
      pos.push_back(generated_position(i, 0));
    }
    tokens[s].assign(ids.end() - counts[s], ids.end());
    caches.push_back(text.make_cache(512, GetParam().kv));
    text.forward({ids.data(), pos.data(), contexts[s]}, caches[s], golden::pool());
    KvCache alone = text.make_cache(512, GetParam().kv);
    alone.copy_prefix(caches[s], contexts[s]);
    for (int64_t t = contexts[s]; t < contexts[s] + counts[s]; ++t) {
      text.forward({&ids[t], &pos[t], 1}, alone, golden::pool());
      std::vector<float> logits(vocab);
      text.logits(text.last_hidden(), 1, logits.data(), golden::pool());
      want_h.emplace_back(text.last_hidden(), text.last_hidden() + hid);
      want_l.push_back(std::move(logits));
    }
  }
  std::vector<int32_t> ids;
  std::vector<Pos3> pos;
  std::vector<KvCache*> cs;
  for (size_t s = 0; s < contexts.size(); ++s) {
    for (int64_t j = 0; j < counts[s]; ++j) pos.push_back(generated_position(contexts[s] + j, 0));
    ids.insert(ids.end(), tokens[s].begin(), tokens[s].end());
    cs.push_back(&caches[s]);
  }
  const int64_t rows = static_cast<int64_t>(ids.size());
  std::vector<float> hidden(rows * hid), logits(rows * vocab);
  text.forward_pieces(ids, pos, cs, counts, golden::pool(), hidden.data());
  text.logits(hidden.data(), rows, logits.data(), golden::pool());
  for (int64_t r = 0; r < rows; ++r) {
    SCOPED_TRACE(::testing::Message() << "row " << r);
    EXPECT_TRUE(same_bits(&hidden[r * hid], want_h[r].data(), hid));
    EXPECT_TRUE(same_bits(&logits[r * vocab], want_l[r].data(), vocab));
  }
  for (size_t s = 0; s < contexts.size(); ++s) EXPECT_EQ(caches[s].size(), contexts[s] + counts[s]);
}

TEST(BatchedDecodeErrors, RefusesTwoSequencesOnOneCache) {
  Model& model = golden::tiny(WeightFormat::F32);
  TextDecoder& text = model.text();
  KvCache cache = text.make_cache(16);
  const std::vector<int32_t> ids = {1, 2};
  const std::vector<Pos3> pos = {{0, 0, 0}, {0, 0, 0}};
  KvCache* both[] = {&cache, &cache};
  std::vector<float> hidden(2 * model.config().text.hidden_size);
  EXPECT_THROW(text.forward_batch(ids, pos, both, golden::pool(), hidden.data()), Error);
  EXPECT_EQ(cache.size(), 0);
}

INSTANTIATE_TEST_SUITE_P(Formats, BatchedDecode,
                         ::testing::Values(Case{WeightFormat::F32, KvType::F32}, Case{WeightFormat::BF16, KvType::F32},
                                           Case{WeightFormat::Q8, KvType::F32}, Case{WeightFormat::Q4, KvType::F32},
                                           Case{WeightFormat::BF16, KvType::F16}, Case{WeightFormat::Q8, KvType::F16},
                                           Case{WeightFormat::F32, KvType::F32, true},
                                           Case{WeightFormat::BF16, KvType::F32, true},
                                           Case{WeightFormat::Q4, KvType::F32, true}),
                         [](const auto& info) {
                           return std::string(info.param.moe ? "moe_" : "") + weight_format_name(info.param.format) +
                                  "_kv_" + kv_type_name(info.param.kv);
                         });

}  // namespace
}  // namespace qvl
