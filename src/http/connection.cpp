#include "http/connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace qvl {

void Connection::start_handling(int version_minor) {
  std::lock_guard lock(watch_mutex_);
  http11_ = version_minor >= 1;
  probed_ = responding_ = gone_ = false;
}

void Connection::start_response() {
  std::lock_guard lock(watch_mutex_);
  responding_ = true;
}

bool Connection::half_closed() {
  pollfd p{fd.get(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool Connection::client_gone() {
  std::lock_guard lock(watch_mutex_);
  if (gone_) return true;
  pollfd p{fd.get(), POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  // Reset, or both directions shut: nobody will read an answer.
  if (p.revents & (POLLERR | POLLHUP)) return gone_ = true;
  if ((p.revents & POLLRDHUP) && http11_ && !responding_ && !probed_) {
    probed_ = true;
    static constexpr char kProcessing[] = "HTTP/1.1 102 Processing\r\n\r\n";
    const ssize_t n = ::send(fd.get(), kProcessing, sizeof kProcessing - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) gone_ = true;
  }
  return gone_;
}

}  // namespace qvl
