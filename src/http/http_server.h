// qvl's HTTP/1.1 server: one event-loop thread owns every connection while a
// request is being read, so a client that sends slowly (or not at all) holds
// no thread; a complete request goes to a bounded pool of workers that run
// the handler and write the answer, then hand the connection back for the
// next request (keep-alive, pipelining: buffered requests are answered in
// order, RFC 9112 §9.3.2).
//
// Slow clients are bounded per request, not per read: the head must arrive
// within header_timeout_s of its first byte and the body within
// body_timeout_s plus its size at min_body_rate (then 408 and close); an idle
// keep-alive connection closes after idle_timeout_s. Connections are capped
// in total and per client address; at a cap, the connection of that address
// (or of any) that has waited longest without a request being handled makes
// room, so a flood of idle sockets cannot lock out a new request; when none
// can, the newcomer gets 503.
//
// Request bodies are bounded in total too (max_body_memory): the caps on
// connections bound how many clients there are, not what they send, and
// 1024 connections × a 64 MiB body each would be 64 GiB. A body counts from
// its first byte until its handler has finished; the request whose bytes
// would pass the budget gets 503 with Retry-After and its bytes are dropped.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "http/http_message.h"
#include "http/http_parser.h"

namespace qvl {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // numeric IPv4/IPv6 address or a name
  int port = 0;                    // 0: any free port
  int workers = 8;                 // handlers running at once
  size_t max_connections = 1024;
  size_t max_connections_per_address = 128;
  double header_timeout_s = 10;
  double body_timeout_s = 30;
  size_t min_body_rate = 64u << 10;  // bytes/s a body beyond body_timeout_s must keep up
  double idle_timeout_s = 5;
  double write_timeout_s = 30;       // for each write to make progress
  size_t max_body_memory = size_t(1) << 30;  // body bytes held at once, all connections together
  ParserLimits limits;
};

class HttpServer {
 public:
  using Handler = std::function<void(HttpRequest&, HttpResponse&)>;
  // The answer to a request refused before any handler saw it (malformed,
  // too large, too slow, over the connection cap): status and why.
  using ErrorResponder = std::function<HttpResponse(int status, const std::string& message)>;
  // After a handler's response was written (or failed to be).
  using Completion = std::function<void(const HttpRequest&, const HttpResponse&)>;

  HttpServer(HttpServerOptions options, Handler handler, ErrorResponder on_error = {}, Completion on_done = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the port. Throws qvl::Error naming the address.
  int listen();
  // Serves until stop(): the calling thread is the event loop.
  void run();
  // From any thread: stop accepting, close connections waiting for a
  // request, let running handlers finish, then run() returns.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qvl
