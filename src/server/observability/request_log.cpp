#include "server/observability/request_log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "server/replies/completion_json.h"
#include "server/observability/request_records.h"

namespace qvl {

namespace {

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

// A value for a text log: bare when it is a plain word, quoted JSON otherwise.
std::string text_value(const nlohmann::ordered_json& v) {
  if (v.is_number_float()) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v.get<double>());
    return b;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    bool plain = !s.empty();
    for (char c : s) plain = plain && c > ' ' && c != '"' && c != '=' && static_cast<unsigned char>(c) < 127;
    if (plain) return s;
  }
  return v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

void RequestLog::write(const HttpRequest& req, const HttpResponse& res, RequestRecord& rec) {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - rec.start).count();
  nlohmann::ordered_json line = {{"time", utc_now()}, {"id", rec.id},          {"method", req.method},
                         {"route", rec.route}, {"status", res.status}, {"ms", ms}};
  {
    std::lock_guard lock(rec.mutex);
    for (auto& [k, v] : rec.fields.items()) line[k] = v;
  }
  std::string out;
  if (json_) {
    out = line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } else {
    for (auto& [k, v] : line.items()) {
      if (!out.empty()) out += ' ';
      out += k + "=" + text_value(v);
    }
  }
  out += '\n';
  std::lock_guard lock(mutex_);
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

}  // namespace qvl
