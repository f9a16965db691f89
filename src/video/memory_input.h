// An FFmpeg demuxer reading one buffer in memory and nothing else: custom
// I/O, no protocols, every nested open refused (MOV data references,
// playlists, concat lists), demuxers limited to the containers qvl supports,
// and a deadline FFmpeg polls through its interrupt callback.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

namespace qvl::video_detail {

// Wall-clock limit of one decode; 0 seconds means none.
class Deadline {
 public:
  explicit Deadline(double seconds);
  bool passed() const;
  double seconds() const { return seconds_; }
  // Throws qvl::Error "<doing> the video took over the limit of N s" once passed.
  void check(const char* doing) const;

 private:
  double seconds_;
  std::chrono::steady_clock::time_point end_;
};

struct AvFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
  void operator()(AVFrame* f) const { av_frame_free(&f); }
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};

// "Invalid data found when processing input" for an AVERROR code.
std::string av_error_text(int code);

// FFmpeg's first error message on this thread while one of these lives
// ("Number of streams exceeds max_streams parameter (16)"), so an error can
// quote it. FFmpeg logs through one process-wide callback: it is set once,
// to a function that keeps the message for the collector alive on the
// calling thread and drops everything else, so a hostile file cannot flood
// the server's log.
class FfmpegMessages {
 public:
  FfmpegMessages();
  ~FfmpegMessages();
  FfmpegMessages(const FfmpegMessages&) = delete;
  FfmpegMessages& operator=(const FfmpegMessages&) = delete;
  void add(const char* line);
  // " (FFmpeg: ...)" or "".
  std::string quoted() const;
  // quoted() of the collector alive on this thread, "" when none.
  static std::string quoted_current();

 private:
  std::string first_;
  FfmpegMessages* outer_;
};

class MemoryInput {
 public:
  // Opens the container; throws qvl::Error naming why it cannot. The buffer
  // and the deadline must outlive this object.
  MemoryInput(std::span<const uint8_t> bytes, int max_streams, const Deadline& deadline);
  ~MemoryInput();
  MemoryInput(const MemoryInput&) = delete;
  MemoryInput& operator=(const MemoryInput&) = delete;

  AVFormatContext* format() const { return format_; }

  // Called by FFmpeg through AVIOContext.
  int read(uint8_t* buf, int size);
  int64_t seek(int64_t offset, int whence);
  bool interrupted() const { return deadline_.passed(); }

 private:
  void release();
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  const Deadline& deadline_;
  AVIOContext* io_ = nullptr;
  AVFormatContext* format_ = nullptr;
};

}  // namespace qvl::video_detail
