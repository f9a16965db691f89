#include "model/positions.h"

#include <algorithm>

#include "util/error.h"

namespace qvl {

PromptPositions rope_index(std::span<const int32_t> ids, std::span<const ImageGrid> grids, int32_t image_token_id,
                           int merge) {
  return rope_index(ids, grids, image_token_id, image_token_id, merge);
}

PromptPositions rope_index(std::span<const int32_t> ids, std::span<const ImageGrid> grids, int32_t image_token_id,
                           int32_t video_token_id, int merge) {
  PromptPositions out;
  out.pos.reserve(ids.size());
  const int64_t n = static_cast<int64_t>(ids.size());
  int64_t next = 0;  // max position so far + 1
  size_t image = 0;
  for (int64_t i = 0; i < n;) {
    if (ids[i] != image_token_id && ids[i] != video_token_id) {
      out.pos.push_back({next, next, next});
      ++next;
      ++i;
      continue;
    }
    if (image >= grids.size())
      fail("prompt has more image-token runs than images (", grids.size(), " image(s)); run ", image + 1, " at token ", i);
    const ImageGrid& g = grids[image];
    const int64_t gh = g.h / merge, gw = g.w / merge, count = g.tokens(merge);
    if (i + count > n) fail("image ", image + 1, " needs ", count, " image tokens but the prompt ends after ", n - i);
    for (int64_t k = 0; k < count; ++k)
      if (ids[i + k] != ids[i])
        fail("image ", image + 1, " needs ", count, " consecutive image tokens from token ", i, ", found ", k);
    int64_t top = next;
    for (int64_t ti = 0; ti < g.t; ++ti)
      for (int64_t hi = 0; hi < gh; ++hi)
        for (int64_t wi = 0; wi < gw; ++wi) {
          out.pos.push_back({next + ti, next + hi, next + wi});
          top = std::max({top, next + ti, next + hi, next + wi});
        }
    next = top + 1;
    i += count;
    ++image;
  }
  if (image != grids.size()) fail("prompt has ", image, " image-token run(s) but ", grids.size(), " image(s) were given");
  out.rope_delta = next - n;
  return out;
}

std::vector<int64_t> image_rows(std::span<const int32_t> ids, int32_t image_token_id) {
  return image_rows(ids, image_token_id, image_token_id);
}

std::vector<int64_t> image_rows(std::span<const int32_t> ids, int32_t image_token_id, int32_t video_token_id) {
  std::vector<int64_t> rows(ids.size(), -1);
  int64_t next = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == image_token_id || ids[i] == video_token_id) rows[i] = next++;
  return rows;
}

}  // namespace qvl
