#include "video/memory_input.h"

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <mutex>

#include "util/error.h"

namespace qvl::video_detail {
namespace {

// The demuxers qvl reads (FFmpeg's names). Everything else -- image2 with
// its file patterns, HLS/DASH playlists, concat, tty, raw streams -- is not
// even probed.
constexpr const char* kDemuxers = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,gif";
constexpr int kIoBufferBytes = 64 * 1024;

int read_cb(void* opaque, uint8_t* buf, int size) { return static_cast<MemoryInput*>(opaque)->read(buf, size); }
int64_t seek_cb(void* opaque, int64_t offset, int whence) {
  return static_cast<MemoryInput*>(opaque)->seek(offset, whence);
}
int interrupt_cb(void* opaque) { return static_cast<const MemoryInput*>(opaque)->interrupted() ? 1 : 0; }

// Any file or URL a container names (a MOV 'dref', an HLS segment) would be
// opened through here: refuse them all, the clip is the buffer and only it.
int refuse_nested_open(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) { return AVERROR(EPERM); }

thread_local FfmpegMessages* current_messages = nullptr;

void on_ffmpeg_log(void* avcl, int level, const char* fmt, va_list args) {
  if (level > AV_LOG_ERROR || !current_messages) return;
  char line[256];
  int print_prefix = 0;
  av_log_format_line2(avcl, level, fmt, args, line, sizeof line, &print_prefix);
  current_messages->add(line);
}

}  // namespace

FfmpegMessages::FfmpegMessages() : outer_(current_messages) {
  static std::once_flag installed;
  std::call_once(installed, [] { av_log_set_callback(on_ffmpeg_log); });
  current_messages = this;
}

FfmpegMessages::~FfmpegMessages() { current_messages = outer_; }

void FfmpegMessages::add(const char* line) {
  if (!first_.empty()) return;
  first_ = line;
  while (!first_.empty() && (first_.back() == '\n' || first_.back() == ' ')) first_.pop_back();
}

std::string FfmpegMessages::quoted() const { return first_.empty() ? "" : " (FFmpeg: " + first_ + ")"; }

std::string FfmpegMessages::quoted_current() { return current_messages ? current_messages->quoted() : ""; }

Deadline::Deadline(double seconds)
    : seconds_(seconds),
      end_(std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds))) {}

bool Deadline::passed() const { return seconds_ > 0 && std::chrono::steady_clock::now() > end_; }

void Deadline::check(const char* doing) const {
  if (passed()) fail(doing, " the video took over the limit of ", seconds_, " s");
}

std::string av_error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, buf, sizeof buf);
  return buf;
}

MemoryInput::MemoryInput(std::span<const uint8_t> bytes, int max_streams, const Deadline& deadline)
    : bytes_(bytes), deadline_(deadline) {
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferBytes));
  if (!buffer) fail("out of memory opening the video");
  io_ = avio_alloc_context(buffer, kIoBufferBytes, 0, this, read_cb, nullptr, seek_cb);
  if (!io_) {
    av_free(buffer);
    fail("out of memory opening the video");
  }
  format_ = avformat_alloc_context();
  if (!format_) {
    release();
    fail("out of memory opening the video");
  }
  format_->pb = io_;
  format_->flags |= AVFMT_FLAG_CUSTOM_IO;
  format_->io_open = refuse_nested_open;
  format_->interrupt_callback = {interrupt_cb, this};
  format_->max_streams = max_streams;
  AVDictionary* options = nullptr;
  av_dict_set(&options, "format_whitelist", kDemuxers, 0);
  // No protocol may be opened at all (the I/O is ours); "none" names none.
  av_dict_set(&options, "protocol_whitelist", "none", 0);
  av_dict_set(&options, "enable_drefs", "0", 0);
  const int rc = avformat_open_input(&format_, nullptr, nullptr, &options);
  av_dict_free(&options);
  if (rc < 0) {
    format_ = nullptr;  // avformat_open_input freed it
    release();
    if (deadline_.passed()) fail("reading the video container took over the limit of ", deadline_.seconds(), " s");
    fail("cannot read the video: not a supported container (MP4/MOV, WebM/MKV, AVI, GIF) or damaged (",
         av_error_text(rc), ")", FfmpegMessages::quoted_current());
  }
}

MemoryInput::~MemoryInput() { release(); }

void MemoryInput::release() {
  if (format_) avformat_close_input(&format_);
  if (io_) {
    av_freep(&io_->buffer);  // FFmpeg may have replaced the buffer it was given
    avio_context_free(&io_);
  }
}

int MemoryInput::read(uint8_t* buf, int size) {
  if (deadline_.passed()) return AVERROR_EXIT;
  if (pos_ >= bytes_.size()) return AVERROR_EOF;
  const size_t n = std::min(static_cast<size_t>(size), bytes_.size() - pos_);
  std::memcpy(buf, bytes_.data() + pos_, n);
  pos_ += n;
  return static_cast<int>(n);
}

int64_t MemoryInput::seek(int64_t offset, int whence) {
  const auto size = static_cast<int64_t>(bytes_.size());
  int64_t base = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return size;
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = static_cast<int64_t>(pos_); break;
    case SEEK_END: base = size; break;
    default: return AVERROR(EINVAL);
  }
  if (offset > size || offset < -size) return AVERROR(EINVAL);
  const int64_t to = base + offset;
  if (to < 0 || to > size) return AVERROR(EINVAL);
  pos_ = static_cast<size_t>(to);
  return to;
}

}  // namespace qvl::video_detail
