// One line per HTTP request on stderr: time, request id, method, route,
// status, duration, and what the handler recorded (tokens, timings, outcome,
// error). --log-format text (key=value) or json (one object per line).
#pragma once

#include <mutex>

#include "http/http_message.h"

namespace qvl {

struct RequestRecord;

class RequestLog {
 public:
  explicit RequestLog(bool json) : json_(json) {}
  void write(const HttpRequest& req, const HttpResponse& res, RequestRecord& rec);

 private:
  bool json_;
  std::mutex mutex_;  // whole lines, never interleaved
};

}  // namespace qvl
