// Engine::last_hidden_states: the retrieval models' forward. Prompts are
// packed into forwards of up to `batch` tokens (the weights read once for
// all of them), each prompt in a KV cache of its own that lives for the
// batch only, so the slots' conversations stay as they were.
#include <algorithm>
#include <cstring>

#include "engine/engine_impl.h"
#include "util/error.h"

namespace qvl {
namespace {

// One prompt of a batch: its tokens and its vision job.
struct PooledPrompt {
  PreparedPrompt prompt;
  std::unique_ptr<VisionStage> vision;
};

// The image rows of several prompts as one VisionFeatures: `vis_row` [rows
// of all prompts] indexes it, -1 for text.
void concatenate(std::span<PooledPrompt> batch, VisionFeatures& all, std::vector<int64_t>& vis_row) {
  vis_row.clear();
  all = {};
  for (PooledPrompt& p : batch) {
    VisionFeatures& f = p.vision->features();
    const int64_t base = all.tokens;
    for (int64_t row : p.vision->rows()) vis_row.push_back(row >= 0 ? row + base : -1);
    if (f.tokens == 0) continue;
    all.tokens += f.tokens;
    all.embeds.insert(all.embeds.end(), f.embeds.begin(), f.embeds.end());
    if (all.deepstack.size() < f.deepstack.size()) all.deepstack.resize(f.deepstack.size());
    for (size_t k = 0; k < f.deepstack.size(); ++k)
      all.deepstack[k].insert(all.deepstack[k].end(), f.deepstack[k].begin(), f.deepstack[k].end());
    f = {};  // the copy above is the one the forward reads
  }
}

}  // namespace

PoolResult Engine::last_hidden_states(const PoolRequest& request) {
  Impl& m = *impl_;
  const EngineClock::time_point start = EngineClock::now();
  TextDecoder& text = m.model->text();
  const int64_t h = m.model->config().text.hidden_size;
  PreprocessOptions options{request.min_pixels > 0 ? request.min_pixels : m.info.min_pixels,
                            request.max_pixels > 0 ? request.max_pixels : m.info.max_pixels};
  if (m.params.pixel_cap > 0) options.max_pixels = std::min(options.max_pixels, m.params.pixel_cap);
  options.min_pixels = std::min(options.min_pixels, options.max_pixels);

  PoolResult out;
  out.hidden_size = h;
  out.hidden.resize(request.prompts.size() * h);
  std::vector<PooledPrompt> prompts(request.prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    prompts[i].prompt = prepare_prompt(request.prompts[i], {}, m.model->folder(), m.chat_template, m.tokenizer,
                                       options, m.key_seed, m.info.video_budget.max_tokens);
    const int64_t length = static_cast<int64_t>(prompts[i].prompt.ids.size());
    if (length > m.params.ctx_size)
      throw FieldError("input", cat("input ", i, " is ", length, " tokens but the context holds ", m.params.ctx_size,
                                    " (--ctx-size); shorten it or send smaller images"));
    out.prompt_tokens.push_back(length);
    out.prompt_ids.push_back(prompts[i].prompt.ids);
  }
  out.timings.preprocess_ms = ms_since(start);

  const int64_t budget = std::max<int64_t>(1, m.params.batch);
  std::vector<float> rows_hidden;
  std::vector<int32_t> ids;
  std::vector<Pos3> pos;
  std::vector<int64_t> vis_row, counts;
  VisionFeatures features;
  for (size_t first = 0; first < prompts.size();) {
    if (request.cancel && request.cancel->load()) fail("cancelled");
    // The batch: prompts in order while their tokens fit the budget (at least one).
    size_t last = first;
    int64_t tokens = out.prompt_tokens[first];
    while (last + 1 < prompts.size() && tokens + out.prompt_tokens[last + 1] <= budget)
      tokens += out.prompt_tokens[++last];
    const std::span<PooledPrompt> batch(prompts.data() + first, last - first + 1);

    for (PooledPrompt& p : batch) {
      p.vision = std::make_unique<VisionStage>(p.prompt, 0, options, m.info.merge_size, m.image_cache, out.timings);
      while (!p.vision->step(*m.model, m.image_cache, m.pool, out.timings)) {
      }
    }
    concatenate(batch, features, vis_row);
    ids.clear();
    pos.clear();
    counts.clear();
    std::vector<KvCache> caches;
    std::vector<KvCache*> cache_of;
    caches.reserve(batch.size());
    for (const PooledPrompt& p : batch) {
      ids.insert(ids.end(), p.prompt.ids.begin(), p.prompt.ids.end());
      pos.insert(pos.end(), p.prompt.positions.pos.begin(), p.prompt.positions.pos.end());
      counts.push_back(static_cast<int64_t>(p.prompt.ids.size()));
      caches.push_back(text.make_cache(counts.back(), m.info.kv_type));
      cache_of.push_back(&caches.back());
    }
    const EngineClock::time_point t = EngineClock::now();
    rows_hidden.resize(tokens * h);
    const TextInput in{ids.data(), pos.data(), tokens, vis_row.data(), &features, /*prompt=*/true};
    text.forward_prompts(in, cache_of, counts, m.pool, rows_hidden.data());
    out.timings.prefill_ms += ms_since(t);
    out.timings.prefill_tokens += tokens;
    int64_t end = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      end += counts[i];
      std::memcpy(&out.hidden[(first + i) * h], &rows_hidden[(end - 1) * h], h * sizeof(float));
      batch[i] = {};  // its images and vision rows are no longer needed
    }
    first = last + 1;
  }
  return out;
}

std::vector<float> Engine::head_rows(std::span<const int32_t> ids) const { return impl_->model->head_rows(ids); }

bool Engine::has_head() const { return impl_->model->weights().text.has_head(); }

}  // namespace qvl
