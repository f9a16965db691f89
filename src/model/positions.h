// Qwen3-VL's 3-D (t, h, w) position ids for a prompt of text and images: the
// rope-index rules of transformers' Qwen3VLModel.get_rope_index.
//  - text advances all three axes together;
//  - an image of merged grid (t, h, w) placed after position p gets
//    (p+1 + ti, p+1 + hi, p+1 + wi) for each of its tokens (row-major);
//  - the text after an image continues at max(previous) + 1;
//  - rope_delta = max(position) + 1 - L: the generated token at KV index i has
//    position i + rope_delta on all three axes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qvl {

struct Pos3 {
  int64_t t = 0, h = 0, w = 0;
  bool operator==(const Pos3&) const = default;
};

// An image's patch grid before the spatial merge (image_grid_thw).
struct ImageGrid {
  int t = 1, h = 0, w = 0;
  int64_t patches() const { return int64_t{t} * h * w; }
  int64_t tokens(int merge) const { return patches() / (int64_t{merge} * merge); }
};

struct PromptPositions {
  std::vector<Pos3> pos;  // [L]
  int64_t rope_delta = 0;
};

// `ids` holds each image as a run of exactly grid.tokens(merge) image tokens,
// images in the order of `grids`. Throws when runs and grids disagree.
PromptPositions rope_index(std::span<const int32_t> ids, std::span<const ImageGrid> grids, int32_t image_token_id,
                           int merge);

// With videos too (get_rope_index with video_grid_thw repeated per temporal
// group and t set to 1): every temporal group of a video is a run of
// `video_token_id` placed like an image of grid (1, h, w), the timestamp text
// between groups advancing positions as text does. `grids` holds one entry
// per run, images and video groups in prompt order.
PromptPositions rope_index(std::span<const int32_t> ids, std::span<const ImageGrid> grids, int32_t image_token_id,
                           int32_t video_token_id, int merge);

// For each token, its row among the prompt's image tokens (images in order),
// or -1 for a text token: where vision features go in the decoder input.
std::vector<int64_t> image_rows(std::span<const int32_t> ids, int32_t image_token_id);
// The same over image and video tokens together (DeepStack and the merger
// rows of a video follow its tokens in prompt order, like an image's).
std::vector<int64_t> image_rows(std::span<const int32_t> ids, int32_t image_token_id, int32_t video_token_id);

// Position of a token appended at KV index `i` after a prompt with `rope_delta`.
inline Pos3 generated_position(int64_t i, int64_t rope_delta) {
  return {i + rope_delta, i + rope_delta, i + rope_delta};
}

}  // namespace qvl
