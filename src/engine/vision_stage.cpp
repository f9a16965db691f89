#include "engine/vision_stage.h"

#include <algorithm>
#include <chrono>

#include "image/video_preprocess.h"
#include "model/model.h"
#include "util/error.h"

namespace qvl {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

VisionStage::VisionStage(PreparedPrompt& prompt, int64_t reused, const PreprocessOptions& options, int merge,
                         ImageEmbeddingCache& cache, Timings& timings)
    : prompt_(&prompt), options_(options) {
  const PreparedPrompt& p = prompt;
  const int64_t length = static_cast<int64_t>(p.ids.size());
  // Image rows inside the reused prefix are in the KV cache already: the
  // recomputed tokens' rows count from the first image after it.
  int64_t rows_before = 0;
  int64_t image_start = 0;  // the row where image `image` starts, over all of the prompt's images
  size_t image = 0;
  for (int64_t i = 0; i < length && image < p.grids.size(); ++i) {
    if (p.image_row[i] < 0 || p.image_row[i] != image_start) continue;
    const int64_t tokens = p.grids[image].tokens(merge);
    if (i >= reused) {
      parts_.push_back({image, cache.find(p.keys[image])});
      ++(parts_.back().features ? timings.image_cache_hits : timings.image_cache_misses);
    } else {
      rows_before += tokens;
    }
    image_start += tokens;
    ++image;
  }
  rows_.assign(p.image_row.begin() + reused, p.image_row.end());
  for (int64_t& row : rows_)
    if (row >= 0) row -= rows_before;
  // Pixels of images that will not be encoded (cached, or in the reused prefix) are not needed.
  std::vector<bool> to_encode(p.images.size(), false);
  for (const Part& part : parts_)
    if (!part.features) to_encode[part.image] = true;
  for (size_t i = 0; i < p.images.size(); ++i)
    if (!to_encode[i]) {
      prompt.images[i].reset();
      prompt.videos[i].reset();
    }
}

// The prompt's image keys and grids stay; only the decoded pixels go.
void VisionStage::drop_pixels() {
  for (std::shared_ptr<const Image>& image : prompt_->images) image.reset();
  for (std::shared_ptr<const Video>& video : prompt_->videos) video.reset();
}

bool VisionStage::step(const Model& model, ImageEmbeddingCache& cache, ThreadPool& pool, Timings& timings) {
  const Clock::time_point start = Clock::now();
  const VisionEncoder& vision = model.vision();
  const PreparedPrompt& p = *prompt_;
  if (!started_) {
    started_ = true;
    std::vector<size_t> todo;
    for (size_t j = 0; j < parts_.size(); ++j) {
      if (parts_[j].features) continue;
      const ImageKey& key = p.keys[parts_[j].image];
      if (std::none_of(todo.begin(), todo.end(), [&](size_t k) { return p.keys[parts_[k].image] == key; }))
        todo.push_back(j);
    }
    if (todo.empty()) {
      drop_pixels();
      gather();
      timings.vision_ms += ms_since(start);
      return true;
    }
    encode_ = std::make_unique<Encode>();
    encode_->parts = std::move(todo);
    for (const size_t j : encode_->parts) {
      const size_t item = parts_[j].image;
      if (const Video* v = p.videos[item].get())
        encode_->pixels.push_back(
            preprocess_video(v->frames, model.folder().video_preprocessor.frames, p.video_options[item]));
      else
        encode_->pixels.push_back(preprocess(*p.images[item], model.folder().preprocessor, options_));
    }
    drop_pixels();  // the preprocessed copies are all the encoder reads
    std::vector<VisionInput> inputs;
    for (size_t k = 0; k < encode_->parts.size(); ++k)
      inputs.push_back({encode_->pixels[k].data.data(), p.grids[parts_[encode_->parts[k]].image]});
    encode_->encoding = vision.begin(inputs);
    timings.preprocess_ms += ms_since(start);
    return false;
  }
  if (!encode_) fail("VisionStage::step after the stage was cancelled or complete");
  VisionEncoding& encoding = encode_->encoding;
  vision.step(encoding, pool);
  // Only the first piece reads the pixels; an interleaved encode lasts long.
  if (encoding.pieces_done() == 1) std::vector<PixelValues>().swap(encode_->pixels);
  if (encoding.done()) {
    cache_encoded(vision.finish(encoding), model.config().vision.spatial_merge_size, cache);
    encode_.reset();
    gather();
  }
  timings.vision_ms += ms_since(start);
  return !encode_;
}

// The encode's rows cut per image into the image cache; every part showing
// that image (the same picture twice in one prompt) takes them.
void VisionStage::cache_encoded(VisionFeatures out, int merge, ImageEmbeddingCache& cache) {
  const PreparedPrompt& p = *prompt_;
  const size_t width = out.tokens > 0 ? out.embeds.size() / static_cast<size_t>(out.tokens) : 0;
  size_t row = 0;
  for (const size_t j : encode_->parts) {
    const size_t image = parts_[j].image;
    auto f = std::make_shared<ImageFeatures>();
    f->grid = p.grids[image];
    f->tokens = f->grid.tokens(merge);
    const size_t lo = row * width, hi = (row + static_cast<size_t>(f->tokens)) * width;
    f->embeds.assign(out.embeds.begin() + lo, out.embeds.begin() + hi);
    for (const std::vector<float>& level : out.deepstack) f->deepstack.emplace_back(level.begin() + lo, level.begin() + hi);
    row += static_cast<size_t>(f->tokens);
    cache.insert(p.keys[image], f);
    for (Part& part : parts_)
      if (!part.features && p.keys[part.image] == p.keys[image]) part.features = f;
  }
}

// Each part's reference is dropped once copied (the image cache holds its own
// when it is on), so the rows are not resident twice during the prefill.
void VisionStage::gather() {
  VisionFeatures& v = features_;
  v = {};
  for (Part& part : parts_) {
    const ImageFeatures& f = *part.features;
    v.tokens += f.tokens;
    v.image_tokens.push_back(f.tokens);
    v.embeds.insert(v.embeds.end(), f.embeds.begin(), f.embeds.end());
    v.deepstack.resize(f.deepstack.size());
    for (size_t k = 0; k < f.deepstack.size(); ++k)
      v.deepstack[k].insert(v.deepstack[k].end(), f.deepstack[k].begin(), f.deepstack[k].end());
    part.features.reset();
  }
}

}  // namespace qvl
