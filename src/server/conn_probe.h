// Tells whether the client of a request has gone away, while its handler is
// still working (waiting in the queue, or generating a non-streamed answer).
//
// cpp-httplib 0.11 (Debian 12) does not expose the connection's socket to a
// handler, and its is_writable() only asks select() — true for a socket whose
// peer has closed. So the probe finds the socket by the request's address
// 4-tuple, which is unique among open TCP connections, and asks the kernel:
// peer hung up (POLLRDHUP/POLLHUP) or EOF pending. The handler runs while the
// library holds the socket open, so the descriptor cannot be reused under us.
#pragma once

#include <string>

namespace qvl {

class ConnectionProbe {
 public:
  ConnectionProbe() = default;
  // Finds the connected socket with these endpoints; an empty probe (never
  // "closed") when none matches.
  static ConnectionProbe find(const std::string& local_addr, int local_port, const std::string& remote_addr,
                              int remote_port);
  bool valid() const { return fd_ >= 0; }
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace qvl
