// Video input: a clip in memory (MP4/MOV, WebM/MKV, AVI, animated GIF)
// demuxed and decoded with FFmpeg's libraries, with only the frames Qwen3-VL's
// video processor samples kept, as 8-bit RGB. Limits are decided from the
// container's headers before any frame is decoded, so a hostile file costs
// no more than its headers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "image/image.h"

namespace qvl {

// Which frames of a clip are used: transformers' Qwen3VLVideoProcessor
// (video_processing_qwen3_vl.py, class attributes fps=2, min_frames=4,
// max_frames=768; the checkpoint's video_preprocessor_config.json sets none).
// A cap on the prompt tokens one video takes: its vision tokens plus, per
// temporal group, the "<t seconds>" text and the group's vision_start /
// vision_end (qvl's --max-video-tokens). Before decoding it lowers
// max_frames (within_token_budget); after sampling, the engine lowers the
// processor's total pixel budget to fit the rest (video_preprocess.h).
struct VideoTokenBudget {
  int64_t max_tokens = 0;    // 0: no cap (the model's video_preprocessor_config alone)
  int token_side = 32;       // pixels per side of one vision token: patch_size × merge_size
  int frames_per_group = 2;  // temporal_patch_size
};

// The fewest vision tokens per temporal group the budget plans frames for:
// qwen-vl-utils' VIDEO_MIN_TOKEN_NUM (vision_process.py), its floor on a
// frame's size. A clip smaller than that needs only its own size.
inline constexpr int64_t kMinGroupVisionTokens = 128;
// The most text tokens a temporal group adds: "<", up to 4 digits of seconds
// (VideoLimits::max_duration_s is under 10^4), ".", one decimal, " seconds",
// ">", and vision_start / vision_end (checked against the tokenizer by
// tests/engine/video_budget_test.cpp).
inline constexpr int64_t kMaxGroupTextTokens = 11;

struct FrameSampling {
  double fps = 2.0;  // frames sampled per second of video
  int min_frames = 4;
  int max_frames = 768;
  VideoTokenBudget budget;  // lowers max_frames for the clip's size (within_token_budget)
};

struct VideoLimits {
  size_t max_encoded_bytes = 256u << 20;
  // From the headers, before decoding. One hour at 60 fps of 4K frames: a
  // clip beyond these costs minutes of decoding for frames mostly thrown away.
  double max_duration_s = 3600;
  int64_t max_frame_pixels = int64_t{3840} * 2160;
  int64_t max_total_frames = 3600 * 60;
  double max_fps = 1000;  // a declared rate above this is a broken or hostile header
  int max_streams = 16;   // tracks in the container (audio, subtitles, ...), any kind
  // Wall time demuxing + decoding may take (0: none), checked between
  // packets and in FFmpeg's interrupt callback.
  double max_seconds = 120;
  // Reserves the kept RGB frames plus the decoder's own frames before the
  // first packet is decoded; see video_decode_peak_bytes.
  DecodeBudget* budget = nullptr;
};

// How decode_video reaches the sampled frames (docs/video.md). By default it
// decodes only what they need: for H.264 and H.265 clips whose packets map
// one to one onto frames, each sampled frame is decoded from the last clean
// start before it (the demuxer seeks over a gap holding a whole group of
// pictures), and non-reference frames that are not sampled are discarded
// unread; the kept frames are bit for bit those of decoding everything.
// Other clips are decoded whole, on the same threads.
struct VideoDecoding {
  bool skip_unsampled = true;  // false: every frame, in order (the reference the skipping is tested against)
  int threads = 0;             // decoder threads; 0: video_decoder_threads(1)
};

// Frame threads hold a frame each besides the references: with H.264's 16
// references this many keep a decode within kDecoderFramesHeld frames.
inline constexpr int kMaxDecoderThreads = 8;

// Threads for one decode among `decodes_at_once` running together: the CPUs
// this process may run on, shared evenly, within [1, kMaxDecoderThreads].
int video_decoder_threads(int decodes_at_once);

// What decoding took: for `qvl bench` and the tests that check frames were
// skipped. A decode of everything sends every packet up to the last sampled
// frame's and decodes each frame.
struct VideoDecodeStats {
  int64_t packets_sent = 0;    // to the decoder (packets skipped over never are)
  int64_t frames_decoded = 0;  // frames the decoder produced (a discarded non-reference frame is not)
  int64_t seeks = 0;           // demuxer jumps over a gap holding a whole group of pictures
  int threads = 1;
  bool skipped = false;        // false: every frame up to the last sampled one was decoded
  bool discarded = false;      // non-reference frames not sampled were discarded (video.h VideoDecoding)
};

struct Video {
  int width = 0;   // of every kept frame (the stream's declared size)
  int height = 0;
  double fps = 0;            // average frame rate, what sampling and timestamps use
  int64_t total_frames = 0;  // in the stream (the container's count, or counted)
  std::string container;     // FFmpeg's demuxer name, for messages
  std::string codec;
  std::vector<int64_t> frame_indices;  // the sampled frames, increasing
  std::vector<Image> frames;           // [frame_indices.size()] RGB, width × height
  // This clip's pixel budget over all its frames for the video processor
  // (qwen-vl-utils' per-part min_pixels / total_pixels); 0: the model's
  // video_preprocessor_config.
  int64_t min_pixels = 0, max_pixels = 0;
  VideoDecodeStats decoding;  // how decode_video got the frames (zero for a list of frames)
};

// A video given as its frames (qwen-vl-utils' list of images with
// sample_fps): every frame is used, frame k at k / fps seconds. Throws when
// the frames differ in size or there are none.
Video video_from_frames(std::vector<Image> frames, double fps);

// The processor's sample_frames: n = int(total / video_fps * fps) clamped to
// [min_frames, max_frames] and to total, then np.linspace(0, total - 1, n)
// rounded half to even. Throws qvl::Error for a total or rate it cannot use.
std::vector<int64_t> sample_frame_indices(int64_t total_frames, double video_fps, const FrameSampling& sampling);

// `s` with max_frames (and min_frames with it) lowered so that every temporal
// group of a width × height clip can keep min(kMinGroupVisionTokens, its
// unscaled token count) vision tokens plus kMaxGroupTextTokens of text within
// s.budget: groups = max_tokens / (that), frames = groups × frames_per_group
// (at least one group). Unchanged without a budget. decode_video applies it
// once the headers give the size.
FrameSampling within_token_budget(FrameSampling s, int width, int height);

// Qwen3VLProcessor._calculate_timestamps: the indices padded with the last
// to a multiple of `temporal_patch_size`, each index / video_fps seconds, one
// timestamp per temporal group, the mean of its first and last frame.
std::vector<double> temporal_group_timestamps(std::span<const int64_t> frame_indices, double video_fps,
                                              int temporal_patch_size = 2);

// Bytes a decode of `sampled` frames of width × height peaks at: the kept RGB
// frames and the decoder's reference and output frames (an estimate of
// FFmpeg's pool: kDecoderFramesHeld frames at 4 bytes per pixel).
uint64_t video_decode_peak_bytes(int width, int height, size_t sampled);
inline constexpr uint64_t kDecoderFramesHeld = 24;  // H.264's 16 references and kMaxDecoderThreads in flight

// Throws qvl::Error with one line saying what is wrong ("video is truncated:
// decoded 5 of the 12 frames its header declares", "unsupported video codec
// mpeg2video (supported: ...)"). Reads `bytes` only: no file, URL or
// reference inside the container is ever opened.
Video decode_video(std::span<const uint8_t> bytes, const FrameSampling& sampling = {}, const VideoLimits& limits = {},
                   const VideoDecoding& how = {});

// decode_video of a file's bytes; the error names the file.
Video load_video(const std::string& path, const FrameSampling& sampling = {}, const VideoLimits& limits = {},
                 const VideoDecoding& how = {});

// True when the bytes start like a container decode_video reads (MP4/MOV
// 'ftyp', Matroska/WebM EBML, AVI RIFF), for front ends that must tell a
// video from an image. An animated GIF is an image unless sent as a video.
bool looks_like_video(std::span<const uint8_t> bytes);

}  // namespace qvl
