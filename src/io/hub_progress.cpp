#include "io/hub_progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace qvl::hub {

std::string format_bytes(uint64_t n) {
  static const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1000 && u < 5) v /= 1000, ++u;
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  else std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string format_duration(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string progress_line(const std::string& name, uint64_t done, uint64_t total, double bytes_per_s, int bar_width) {
  std::ostringstream line;
  line << name;
  if (total > 0) {
    double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    line << "  " << std::setw(3) << static_cast<int>(frac * 100) << "%";
    if (bar_width > 0) {
      int fill = static_cast<int>(frac * bar_width);
      line << " [" << std::string(fill, '#') << std::string(bar_width - fill, ' ') << "]";
    }
    line << " " << format_bytes(done) << " / " << format_bytes(total);
  } else {
    line << "  " << format_bytes(done);
  }
  if (bytes_per_s > 0) {
    line << "  " << format_bytes(static_cast<uint64_t>(bytes_per_s)) << "/s";
    if (total > done) line << "  ETA " << format_duration(static_cast<double>(total - done) / bytes_per_s);
  }
  return line.str();
}

FileProgress::FileProgress(std::ostream* out, bool tty, double line_interval_s, std::string name, uint64_t total,
                           uint64_t resumed)
    : out_(out),
      tty_(tty),
      interval_s_(line_interval_s),
      name_(std::move(name)),
      total_(total),
      resumed_(resumed),
      last_done_(resumed),
      start_(Clock::now()),
      last_draw_(start_) {}

void FileProgress::update(uint64_t done) {
  last_done_ = done;
  if (!out_) return;
  double since = std::chrono::duration<double>(Clock::now() - last_draw_).count();
  if (since >= (tty_ ? 0.1 : interval_s_)) draw(done, false);
}

void FileProgress::finish() {
  if (out_) draw(total_ ? total_ : last_done_, true);
}

void FileProgress::draw(uint64_t done, bool final) {
  last_draw_ = Clock::now();
  double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
  double speed = elapsed > 0.05 && done > resumed_ ? static_cast<double>(done - resumed_) / elapsed : 0;
  if (tty_) {
    // \r + erase-to-end-of-line redraws the bar in place; a newline when done.
    *out_ << "\r" << progress_line(name_, done, total_, speed, 24) << "\x1b[K" << (final ? "\n" : "") << std::flush;
  } else {
    *out_ << "qvl: " << (final ? "downloaded " : "downloading ") << progress_line(name_, done, total_, speed, 0)
          << "\n" << std::flush;
  }
  drawn_ = true;
}

}  // namespace qvl::hub
