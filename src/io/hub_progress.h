// Download progress on stderr: on a terminal one bar per file redrawn in
// place (bytes, speed, ETA); otherwise (logs, CI) a plain line every few
// seconds and one when the file is done.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace qvl::hub {

std::string format_bytes(uint64_t n);        // "512 B", "22.5 MB", "4.26 GB" (SI units, as the hub shows)
std::string format_duration(double seconds);  // "0:07", "12:05", "1:02:03"

// "model.safetensors  45% [#########           ] 10.2 MB / 22.5 MB  3.40 MB/s  ETA 0:04";
// without a bar when bar_width is 0; total 0 means unknown (no percent, no ETA).
std::string progress_line(const std::string& name, uint64_t done, uint64_t total, double bytes_per_s, int bar_width);

class FileProgress {
 public:
  // `resumed` bytes were already on disk: they count as done but not in the speed.
  FileProgress(std::ostream* out, bool tty, double line_interval_s, std::string name, uint64_t total,
               uint64_t resumed);
  void update(uint64_t done);
  void finish();

 private:
  void draw(uint64_t done, bool final);
  using Clock = std::chrono::steady_clock;
  std::ostream* out_;
  bool tty_;
  double interval_s_;
  std::string name_;
  uint64_t total_, resumed_, last_done_ = 0;
  Clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace qvl::hub
