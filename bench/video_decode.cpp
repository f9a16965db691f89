// Long-clip decode figures (issue 46): a 1080p H.264 clip with a keyframe
// every 2 s, made here in memory (or read with --clip), decoded as
// decode_video does by default (only what the sampled frames need, frame
// threads from the cores) and, with --reference, as it did before: every
// frame in order on one thread. Per decode: seconds, the packets sent and
// frames decoded, demuxer seeks, threads, and the peak RSS of the decode
// alone (VmHWM reset through /proc/self/clear_refs before it) above the RSS
// before it. Frames are sampled as qvl samples them: 2 fps within
// --max-video-tokens (4096, qvl's default; 0: the video processor's own
// limit of 768 frames). Prints one JSON object.
//
//   build/bench/video_decode --seconds 120 --save /tmp/clip120.mp4 --reference
//   build/bench/video_decode --clip /tmp/clip120.mp4 --max-video-tokens 0
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include "util/args.h"
#include "util/error.h"
#include "video/encode.h"
#include "video/memory_input.h"
#include "video/video.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// CPU seconds this process has used, every thread's (less sensitive than
// the wall clock to other work on a shared machine).
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double status_mb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key))) / 1024.0;
  return 0;
}

// Camera-like frames, cheap to make: a textured scene twice the frame's
// width panning by 2 px a frame, a block crossing it, and grain that changes
// every frame (from a table, shifted), so the encoder spends bits on every
// frame as on a phone's footage.
class Scene {
 public:
  Scene(int width, int height) : width_(width), height_(height) {
    std::mt19937 rng(46);
    std::uniform_int_distribution<int> grain(-6, 6);
    texture_.resize(size_t(2 * width) * height * 3);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < 2 * width; ++x)
        for (int c = 0; c < 3; ++c) {
          const double v = 120 + 50 * std::sin(x * 0.013 + c) * std::cos(y * 0.021 - c) + 30 * std::sin((x + y) * 0.002);
          texture_[(size_t(y) * 2 * width + x) * 3 + c] = static_cast<uint8_t>(std::clamp(v + grain(rng), 4.0, 251.0));
        }
    noise_.resize(1 << 20);
    for (auto& n : noise_) n = static_cast<int8_t>(grain(rng) / 3);
  }

  qvl::Image frame(int64_t k) const {
    qvl::Image im;
    im.width = width_;
    im.height = height_;
    im.rgb.resize(size_t(width_) * height_ * 3);
    const int pan = static_cast<int>(k * 2 % width_);
    const size_t row = size_t(width_) * 3;
    for (int y = 0; y < height_; ++y)
      std::memcpy(&im.rgb[y * row], &texture_[(size_t(y) * 2 * width_ + pan) * 3], row);
    const int bx = static_cast<int>(k * 6 % (width_ - 200)), by = height_ / 3;
    for (int y = by; y < by + 160; ++y) std::memset(&im.rgb[y * row + size_t(bx) * 3], 230, 200 * 3);
    const size_t shift = size_t(k) * 7919 % noise_.size();
    // The texture keeps 4 levels from either end and the block is 230: no clamping needed.
    for (size_t i = 0; i < im.rgb.size(); ++i)
      im.rgb[i] = static_cast<uint8_t>(im.rgb[i] + noise_[(i + shift) & (noise_.size() - 1)]);
    return im;
  }

 private:
  int width_, height_;
  std::vector<uint8_t> texture_;
  std::vector<int8_t> noise_;
};

// `clip` (MP4, its video track) played `times` over in one MP4, packets
// copied with their timestamps shifted: a long clip without encoding one
// (each copy starts with an IDR picture, so the joins decode as any keyframe
// does). Written through `scratch`, a file.
std::vector<uint8_t> repeated(const std::vector<uint8_t>& clip, int times, const std::string& scratch) {
  const qvl::video_detail::Deadline none(0);
  AVFormatContext* out = nullptr;
  if (avformat_alloc_output_context2(&out, nullptr, "mp4", scratch.c_str()) < 0) throw qvl::Error("no mp4 muxer");
  std::unique_ptr<AVFormatContext, void (*)(AVFormatContext*)> owner(out, [](AVFormatContext* f) {
    if (f->pb) avio_closep(&f->pb);
    avformat_free_context(f);
  });
  AVStream* st = avformat_new_stream(out, nullptr);
  int64_t span = 0;
  AVRational in_tb{};
  {
    qvl::video_detail::MemoryInput in(clip, 16, none);
    const AVStream* src = in.format()->streams[0];
    in_tb = src->time_base;
    avcodec_parameters_copy(st->codecpar, src->codecpar);
    st->codecpar->codec_tag = 0;
    st->time_base = src->time_base;
    AVPacket* p = av_packet_alloc();
    int64_t first = INT64_MAX, end = INT64_MIN;
    while (av_read_frame(in.format(), p) >= 0) {
      first = std::min(first, p->pts);
      end = std::max(end, p->pts + p->duration);
      av_packet_unref(p);
    }
    av_packet_free(&p);
    span = end - first;
  }
  if (avio_open(&out->pb, scratch.c_str(), AVIO_FLAG_WRITE) < 0 || avformat_write_header(out, nullptr) < 0)
    throw qvl::Error("cannot write " + scratch);
  AVPacket* p = av_packet_alloc();
  for (int r = 0; r < times; ++r) {
    qvl::video_detail::MemoryInput in(clip, 16, none);
    while (av_read_frame(in.format(), p) >= 0) {
      if (p->stream_index == 0) {
        p->pts += r * span;
        p->dts += r * span;
        av_packet_rescale_ts(p, in_tb, st->time_base);
        p->stream_index = st->index;
        p->pos = -1;
        if (av_interleaved_write_frame(out, p) < 0) throw qvl::Error("cannot write " + scratch);
      }
      av_packet_unref(p);
    }
  }
  av_packet_free(&p);
  av_write_trailer(out);
  owner.reset();
  std::ifstream back(scratch, std::ios::binary);
  return {std::istreambuf_iterator<char>(back), {}};
}

nlohmann::ordered_json timed_decode(const std::vector<uint8_t>& clip, const qvl::FrameSampling& sampling,
                                    const qvl::VideoDecoding& how, qvl::Video& v) {
  // The figure is the decode's time: no deadline, and a long clip at a
  // phone's bit rate is over the default 256 MB.
  qvl::VideoLimits limits;
  limits.max_seconds = 0;
  limits.max_encoded_bytes = clip.size();
  const double rss_before = status_mb("VmRSS:");
  const bool reset = bool(std::ofstream("/proc/self/clear_refs") << "5");
  const Clock::time_point t = Clock::now();
  const double cpu = cpu_seconds();
  v = qvl::decode_video(clip, sampling, limits, how);
  const double s = seconds_since(t);
  nlohmann::ordered_json j;
  j["decode_s"] = s;
  j["decode_cpu_s"] = cpu_seconds() - cpu;
  j["frames_kept"] = v.frames.size();
  j["frames_in_clip"] = v.total_frames;
  j["packets_sent"] = v.decoding.packets_sent;
  j["frames_decoded"] = v.decoding.frames_decoded;
  j["seeks"] = v.decoding.seeks;
  j["threads"] = v.decoding.threads;
  j["skipped"] = v.decoding.skipped;
  j["kept_frames_mb"] = static_cast<double>(v.frames.size()) * v.width * v.height * 3 / (1024.0 * 1024.0);
  j["rss_before_mb"] = rss_before;
  j[reset ? "peak_rss_mb" : "process_peak_rss_mb"] = status_mb("VmHWM:");
  j["peak_above_before_mb"] = status_mb("VmHWM:") - rss_before;
  return j;
}

int run(int argc, char** argv) {
  qvl::Args args("video_decode", "[--seconds S] [--clip FILE | --save FILE] [--reference]",
                 "Times decode_video on a long 1080p H.264 clip and prints JSON.");
  long seconds = 120, width = 1920, height = 1080, fps = 30, keyframe_seconds = 2, b_frames = 3, max_video_tokens = 4096;
  long kbit_s = 8000;
  std::string preset = "ultrafast", clip_path, save_path;
  bool reference = false;
  long threads = 0, repeat = 1;
  args(seconds, "seconds", "S", "length of the clip made here").range(1, 3600);
  args(width, "width", "PX", "its width").range(64, 3840);
  args(height, "height", "PX", "its height").range(64, 2160);
  args(fps, "fps", "N", "its frame rate").range(1, 120);
  args(keyframe_seconds, "keyframe-seconds", "S", "seconds from one keyframe to the next").range(1, 60);
  args(b_frames, "b-frames", "N", "B-frames between references (0: P-frames only)").range(0, 16);
  args(kbit_s, "kbit-s", "N", "its bit rate (a phone's 1080p: 8000-17000)").range(100, 100000);
  args(preset, "preset", "NAME", "x264 preset of the clip made here (CABAC, the deblocking filter and 8x8 "
                                 "transforms on whatever it says: what phones' High profile decodes like)");
  args(clip_path, "clip", "FILE", "decode this clip instead of making one");
  args(repeat, "repeat", "N", "decode the clip played N times over (remuxed through "
                              "/tmp/video_decode_repeat.mp4): a 10-min clip from a 2-min one").range(1, 100);
  args(save_path, "save", "FILE", "write the clip made here to FILE (reuse it with --clip)");
  args(max_video_tokens, "max-video-tokens", "N", "the video-token budget frames are sampled within (0: none)")
      .range(0, 1 << 24);
  args(threads, "threads", "N", "decoder threads (0: video_decoder_threads, the cores)").range(0, 64);
  args(reference, "reference", "also decode every frame in order on one thread (how qvl decoded before)");
  if (!args.parse(argc, argv)) return 0;

  nlohmann::ordered_json j;
  std::vector<uint8_t> clip;
  if (!clip_path.empty()) {
    std::ifstream in(clip_path, std::ios::binary);
    if (!in) throw qvl::Error("cannot open " + clip_path);
    clip.assign(std::istreambuf_iterator<char>(in), {});
    j["clip"] = {{"file", clip_path}, {"bytes", clip.size()}};
  } else {
    qvl::VideoEncoding e{"mp4", "libx264", static_cast<int>(width), static_cast<int>(height), static_cast<int>(fps),
                         int64_t{seconds} * fps};
    e.keyframe_interval = static_cast<int>(keyframe_seconds * fps);
    e.b_frames = static_cast<int>(b_frames);
    e.preset = preset;
    // Keyframes every keyframe_seconds exactly, as a phone's; High-profile
    // decoding work at a phone's bit rate, whatever the preset's search.
    e.params = "scenecut=0:cabac=1:deblock=0,0:8x8dct=1:bitrate=" + std::to_string(kbit_s);
    e.threads = 0;
    const Scene scene(e.width, e.height);
    const Clock::time_point t = Clock::now();
    clip = qvl::encode_video(e, [&](int64_t k) { return scene.frame(k); });
    j["clip"] = {{"seconds", seconds},   {"width", width},     {"height", height},
                 {"fps", fps},           {"keyframe_s", keyframe_seconds}, {"b_frames", b_frames},
                 {"preset", preset},     {"params", e.params},   {"bytes", clip.size()},
                 {"encode_s", seconds_since(t)}};
    if (!save_path.empty()) std::ofstream(save_path, std::ios::binary).write(reinterpret_cast<const char*>(clip.data()),
                                                                             static_cast<std::streamsize>(clip.size()));
  }
  if (repeat > 1) {
    clip = repeated(clip, static_cast<int>(repeat), "/tmp/video_decode_repeat.mp4");
    j["repeated"] = {{"times", repeat}, {"bytes", clip.size()}};
  }
  qvl::FrameSampling sampling;
  sampling.budget = {max_video_tokens, 32, 2};  // Qwen3-VL: 32 px a token side, 2 frames a group
  j["max_video_tokens"] = max_video_tokens;
  j["decoder_threads_default"] = qvl::video_decoder_threads(1);
  qvl::Video sampled, every;
  j["sampled"] = timed_decode(clip, sampling, {true, static_cast<int>(threads)}, sampled);
  if (reference) {
    sampled.frames.shrink_to_fit();
    j["every_frame_one_thread"] = timed_decode(clip, sampling, {false, 1}, every);
    bool same = sampled.frame_indices == every.frame_indices && sampled.frames.size() == every.frames.size();
    for (size_t i = 0; same && i < every.frames.size(); ++i) same = sampled.frames[i].rgb == every.frames[i].rgb;
    j["same_frames_bit_for_bit"] = same;
  }
  std::cout << j.dump(1) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const qvl::UsageError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "video_decode: " << e.what() << "\n";
    return 1;
  }
}
