// One client connection of HttpServer: its socket, the request being read,
// and while a handler runs, the answer to "is the client gone?".
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "http/http_parser.h"
#include "http/unique_fd.h"

namespace qvl {

using SteadyClock = std::chrono::steady_clock;

struct Connection {
  enum class Phase {
    Reading,    // the event loop reads the next request (or waits for one)
    Handling,   // a worker runs the handler and writes the answer
    Lingering,  // an error was sent; input is read and dropped until EOF, so
                // closing does not reset the connection before the client reads it
  };

  UniqueFd fd;
  uint64_t id = 0;
  std::string addr;  // the client's IP: what per-address caps count
  int port = 0;
  Phase phase = Phase::Reading;
  RequestParser parser;
  std::string pending;  // bytes after a complete request: the next, pipelined one
  bool registered = false;  // in the epoll set
  SteadyClock::time_point waiting_since;  // became Reading: the idle deadline and the eviction order
  SteadyClock::time_point first_byte;     // of the request being read
  SteadyClock::time_point head_done;
  SteadyClock::time_point linger_until;
  bool sent_continue = false;
  size_t body_held = 0;  // this request's body bytes counted against max_body_memory

  // While Handling: whether the client has gone. A FIN alone does not say:
  // the client may have closed (it will answer our next bytes with RST) or
  // only shut down its sending side and still read the answer (RFC 9112
  // §9.6). Before the final response, an HTTP/1.1 client is sent one interim
  // "102 Processing" (RFC 9110 §15.2: a client must accept 1xx it did not
  // ask for); a closed socket answers it with RST, which poll reports. An
  // HTTP/1.0 client gets no 1xx, so its FIN is taken as a half-close.
  bool client_gone();
  void start_handling(int version_minor);
  void start_response();  // no more interim responses: the final one begins
  bool half_closed();     // the client sent FIN (it may still read)

 private:
  std::mutex watch_mutex_;
  bool http11_ = true;
  bool probed_ = false;
  bool responding_ = false;
  bool gone_ = false;
};

}  // namespace qvl
