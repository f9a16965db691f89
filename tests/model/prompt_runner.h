// Runs one golden prompt through the model the way the engine does (vision
// features from the golden pixel values, rope index, chunked prefill, greedy
// KV-cached decode), keeping what the golden tests compare.
#pragma once

#include <algorithm>
#include <vector>

#include "golden.h"
#include "tiny_model.h"

namespace qvl::golden {

struct PromptRun {
  std::vector<int32_t> ids;
  PromptPositions positions;
  VisionFeatures vision;
  std::vector<float> hidden;  // [L, hidden] final-normed
  TextTrace trace;
  std::vector<float> logits_last;           // [vocab]
  std::vector<int32_t> generated;           // greedy
  std::vector<float> gen_top1;              // top-1 logit per step
  std::vector<std::vector<float>> gen_logits;  // full logits per step (when kept)
};

inline PromptRun run_prompt(Model& model, const nlohmann::json& p, int steps, bool keep_trace, bool keep_gen_logits,
                            KvType kv = KvType::F32) {
  const File& f = file(p["file"]);
  PromptRun r;
  r.ids = ids_of(f["input_ids"]);
  std::vector<VisionInput> images;
  std::vector<ImageGrid> grids;
  for (const auto& name : p["images"]) {
    const File& v = file(manifest()["images"][name.get<std::string>()]["file"]);
    images.push_back({v["pixel_values"].f.data(), grids_of(v["image_grid_thw"])[0]});
    grids.push_back(images.back().grid);
  }
  const ModelConfig& c = model.config();
  r.vision = model.vision().encode(images, pool());
  r.positions = rope_index(r.ids, grids, c.image_token_id, c.vision.spatial_merge_size);
  const std::vector<int64_t> rows = image_rows(r.ids, c.image_token_id);
  TextDecoder& text = model.text();
  KvCache cache = text.make_cache(512, kv);
  const int64_t n = static_cast<int64_t>(r.ids.size()), h = c.text.hidden_size, vocab = c.text.vocab_size;
  TextInput in{r.ids.data(), r.positions.pos.data(), n, rows.data(), &r.vision};
  r.hidden.resize(n * h);
  text.forward(in, cache, pool(), r.hidden.data(), keep_trace ? &r.trace : nullptr);
  std::vector<float> logits(vocab);
  text.logits(text.last_hidden(), 1, logits.data(), pool());
  r.logits_last = logits;
  for (int s = 0; s < steps; ++s) {
    const int32_t tok = static_cast<int32_t>(argmax(logits.data(), vocab));
    r.generated.push_back(tok);
    r.gen_top1.push_back(logits[tok]);
    if (keep_gen_logits) r.gen_logits.push_back(logits);
    if (s + 1 == steps) break;
    const Pos3 pos = generated_position(cache.size(), r.positions.rope_delta);
    TextInput step{&tok, &pos, 1};
    text.forward(step, cache, pool());
    text.logits(text.last_hidden(), 1, logits.data(), pool());
  }
  return r;
}

}  // namespace qvl::golden
