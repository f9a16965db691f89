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

// `dir` holds the prompt's golden file ("golden", or "golden-moe" whose prompts
// name the same images); with `gen_trace` the decode steps are traced there.
inline PromptRun run_prompt(Model& model, const nlohmann::json& p, int steps, bool keep_trace, bool keep_gen_logits,
                            KvType kv = KvType::F32, const std::string& dir = "golden",
                            TextTrace* gen_trace = nullptr) {
  const File& f = file(p["file"], dir);
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
    text.forward(step, cache, pool(), nullptr, gen_trace);
    text.logits(text.last_hidden(), 1, logits.data(), pool());
  }
  return r;
}

// The run's hidden states against the golden ones (a case that has them):
// the input embeddings, each layer's output before and after DeepStack, and
// the final norm.
inline void expect_hidden_states(const PromptRun& r, const File& f, int layers, double atol, double rtol) {
  EXPECT_TRUE(close("hidden.inputs_embeds", r.trace.inputs_embeds.data(), f["hidden.inputs_embeds"].f, atol, rtol));
  for (int l = 0; l < layers; ++l) {
    const std::string lo = "hidden.layer_out." + std::to_string(l);
    const std::string al = "hidden.hidden_after_layer." + std::to_string(l);
    EXPECT_TRUE(close(lo, r.trace.layer_out[l].data(), f[lo].f, atol, rtol));
    EXPECT_TRUE(close(al, r.trace.after_layer[l].data(), f[al].f, atol, rtol));
  }
  EXPECT_TRUE(close("hidden.final_norm", r.hidden.data(), f["hidden.final_norm"].f, atol, rtol));
}

// The 16 greedy tokens exactly (the first difference ends the check: the
// continuations diverge from there), each step's top-1 logit within atol.
// The logits at the golden's selected prompt positions (logits_sel), within atol.
inline void expect_selected_logits(Model& model, const PromptRun& r, const File& f, double atol) {
  const int64_t hid = model.config().text.hidden_size, vocab = model.config().text.vocab_size;
  const Tensor& sel = f["logits_sel_positions"];
  std::vector<float> logits(vocab);
  for (int64_t s = 0; s < sel.numel(); ++s) {
    model.text().logits(r.hidden.data() + sel.i[s] * hid, 1, logits.data(), pool());
    std::vector<float> want(f["logits_sel"].f.begin() + s * vocab, f["logits_sel"].f.begin() + (s + 1) * vocab);
    EXPECT_TRUE(close("logits_sel at " + std::to_string(sel.i[s]), logits.data(), want, atol, 0));
  }
}

inline void expect_greedy_tokens(const PromptRun& r, const File& f, double atol) {
  const Tensor& gen = f["generated_ids"];
  const Tensor& gen_vals = f["gen_top_vals"];
  for (int s = 0; s < 16; ++s) {
    if (r.generated[s] != gen.i[s]) {
      ADD_FAILURE() << "greedy token " << s << ": got " << r.generated[s] << ", want " << gen.i[s];
      return;
    }
    EXPECT_NEAR(r.gen_top1[s], gen_vals.f[s * 8], atol) << "top-1 logit of step " << s;
  }
}

}  // namespace qvl::golden
