// The angle tables that ops::rope consumes ([tokens, head_dim/2] cos and sin,
// rotate-half convention), filled the way transformers computes them in
// float32: inv_freq[j] = 1 / theta^(2j/dim), angle = inv_freq[j] * position.
#pragma once

#include <cstdint>
#include <vector>

#include "io/model_config.h"
#include "model/positions.h"

namespace qvl {

// Interleaved multimodal RoPE of the text decoder (Qwen3VLTextRotaryEmbedding
// + apply_interleaved_mrope): frequency j takes its position from
// h when j % 3 == 1 and j < 3*section[1], from w when j % 3 == 2 and
// j < 3*section[2], and from t otherwise. With mrope_interleaved = false the
// Qwen2-VL chunked layout [t * s0, h * s1, w * s2] applies.
class TextRope {
 public:
  explicit TextRope(const TextConfig& config);
  void fill(const Pos3* pos, int64_t n, float* cos, float* sin) const;  // cos/sin [n, head_dim/2]
  int64_t half() const { return static_cast<int64_t>(inv_freq_.size()); }

 private:
  std::vector<float> inv_freq_;  // [head_dim/2]
  std::vector<int> axis_;        // [head_dim/2]: 0 = t, 1 = h, 2 = w
};

// 2-D rotary of the vision tower (Qwen3VLVisionRotaryEmbedding(head_dim/2),
// theta 10000): the first head_dim/4 angles follow the patch row, the next
// head_dim/4 the patch column.
class VisionRope {
 public:
  explicit VisionRope(int head_dim, float theta = 10000.0f);
  void fill(const int32_t* rows, const int32_t* cols, int64_t n, float* cos, float* sin) const;  // [n, head_dim/2]

 private:
  std::vector<float> inv_freq_;  // [head_dim/4]
};

}  // namespace qvl
