// The Qwen3-VL video processor after decoding and sampling (transformers'
// video_processing_qwen3_vl.py): one smart_resize for all frames under a
// TOTAL pixel budget, each frame resized like an image (PIL bicubic, as the
// reference does), the fused normalisation, the last frame repeated to an
// even count, and two consecutive frames per temporal patch in the image
// processor's merge-window row order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "image/image.h"
#include "image/preprocess.h"
#include "io/model_config.h"

namespace qvl {

// video_processing_qwen3_vl.smart_resize: sides rounded (half to even) to
// multiples of `factor`; when t_bar·h·w (t_bar = num_frames rounded to the
// temporal factor) leaves [min_pixels, max_pixels], both sides are scaled by
// sqrt over num_frames·h·w. Throws for a side under `factor` (transformers
// 4.57 refuses those too) or an aspect ratio over 200.
ResizedSize video_smart_resize(int num_frames, int height, int width, int temporal_factor, int factor,
                               int64_t min_pixels, int64_t max_pixels);

// The size preprocess_video() gives frames of width × height (options
// narrowing the config's pixel range, as for images).
ResizedSize video_preprocess_size(int num_frames, int height, int width, const PreprocessorConfig& config,
                                  const PreprocessOptions& options = {});

// `options` with max_pixels lowered (never raised) so that num_frames frames
// of width × height take at most `vision_tokens` vision tokens: grid_t =
// ceil(n / tp) groups of (h / f)·(w / f) tokens each (f = patch × merge).
// The processor's own knob, its total pixel budget, is what moves: qwen-vl-
// utils likewise lowers a clip's max_pixels to fit its total_pixels
// (fetch_video). Throws when not even one token per group fits.
PreprocessOptions video_options_within_tokens(int num_frames, int height, int width,
                                              const PreprocessorConfig& config, PreprocessOptions options,
                                              int64_t vision_tokens);

// frames: the sampled frames, all the same size. grid_t = ceil(n / tp).
PixelValues preprocess_video(std::span<const Image> frames, const PreprocessorConfig& config,
                             const PreprocessOptions& options = {});

}  // namespace qvl
