#include "http/response_writer.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

namespace qvl {

namespace {

// IMF-fixdate (RFC 9110 §5.6.7): an origin server with a clock sends Date (§6.6.1).
std::string http_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

// No body at all for 1xx, 204 and 304 (RFC 9110 §6.4.1).
bool bodyless(int status) { return status < 200 || status == 204 || status == 304; }

class SocketSink : public ChunkSink {
 public:
  SocketSink(const WriteTarget& t, bool chunked) : target_(t), chunked_(chunked) {}
  bool write(std::string_view data) override {
    if (failed_) return false;
    if (data.empty()) return true;  // an empty chunk would end the body
    bool ok;
    if (chunked_) {
      char size[24];
      const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
      std::string frame;
      frame.reserve(data.size() + 32);
      frame.append(size, static_cast<size_t>(n)).append(data).append("\r\n");
      ok = send_all(target_, frame);
    } else {
      ok = send_all(target_, data);
    }
    failed_ = !ok;
    return ok;
  }
  bool failed() const { return failed_; }

 private:
  const WriteTarget& target_;
  bool chunked_;
  bool failed_ = false;
};

}  // namespace

bool send_all(const WriteTarget& t, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(t.fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{t.fd, POLLOUT, 0};
      const int r = ::poll(&p, 1, static_cast<int>(t.write_timeout.count()));
      if (r <= 0 || (p.revents & (POLLERR | POLLHUP))) return false;
      continue;
    }
    return false;  // EPIPE, ECONNRESET: the client is gone
  }
  return true;
}

std::string response_head(const HttpResponse& res, int version_minor, bool keep_alive) {
  std::string h = "HTTP/1.1 " + std::to_string(res.status) + " " + reason_phrase(res.status) + "\r\n";
  for (const auto& [name, value] : res.headers.fields()) {
    if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") || iequals(name, "Connection")) continue;
    h.append(name).append(": ").append(value).append("\r\n");
  }
  h += "Date: " + http_date() + "\r\n";
  if (!bodyless(res.status)) {
    if (!res.streamed()) h += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
    else if (version_minor >= 1) h += "Transfer-Encoding: chunked\r\n";
  }
  if (!keep_alive) h += "Connection: close\r\n";
  else if (version_minor == 0) h += "Connection: keep-alive\r\n";  // HTTP/1.0 closes unless told (RFC 9112 §9.3)
  h += "\r\n";
  return h;
}

bool write_response(const WriteTarget& t, const HttpRequest& req, HttpResponse& res, bool& keep_alive) {
  const bool head_only = req.method == "HEAD";
  if (!res.streamed() || head_only || bodyless(res.status)) {
    std::string out = response_head(res, req.version_minor, keep_alive);
    if (!head_only && !bodyless(res.status)) out += res.body;
    const bool ok = send_all(t, out);
    if (!ok) keep_alive = false;
    if (res.on_end) res.on_end(false);
    return ok;
  }
  // An HTTP/1.0 client has no chunked coding: the body ends when the connection closes.
  const bool chunked = req.version_minor >= 1;
  if (!chunked) keep_alive = false;
  if (!send_all(t, response_head(res, req.version_minor, keep_alive))) {
    keep_alive = false;
    if (res.on_end) res.on_end(false);
    return false;
  }
  SocketSink sink(t, chunked);
  bool completed = false;
  for (;;) {
    if (!res.provider(sink) || sink.failed()) break;
    if (sink.is_done()) {
      completed = !chunked || send_all(t, "0\r\n\r\n");
      break;
    }
  }
  if (!completed) keep_alive = false;
  if (res.on_end) res.on_end(completed);
  return completed;
}

}  // namespace qvl
