// An incremental HTTP/1.1 request parser (RFC 9112) over bytes as they
// arrive: request line, header fields, and a body framed by Content-Length
// or chunked transfer coding. It owns no socket and allocates only what the
// request holds, so it is unit-tested and fuzzed directly.
//
// Every limit is checked before the bytes it guards are kept: the head
// (request line + fields) against max_header_bytes (431), the target against
// max_uri_bytes (414), and the body against max_body_bytes (413), decided
// from Content-Length before any body byte is read.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "http/http_message.h"

namespace qvl {

struct ParserLimits {
  size_t max_header_bytes = 32u << 10;  // request line + header fields (+ chunked trailers)
  size_t max_uri_bytes = 8u << 10;
  size_t max_header_fields = 100;
  size_t max_body_bytes = 64u << 20;
};

struct ParseError {
  int status = 0;       // 400, 413, 414, 431, 501, 505
  std::string message;  // one line, says what was wrong
};

class RequestParser {
 public:
  enum class State {
    Idle,      // nothing of a request yet (empty lines before one are skipped, RFC 9112 §2.2)
    Head,      // in the request line or header fields
    Body,      // head parsed; body bytes pending
    Complete,  // request() is whole; feed() consumes nothing more
    Failed,    // error() says why; the connection must close
  };

  explicit RequestParser(const ParserLimits& limits = {}) : limits_(limits) {}

  // Consumes bytes of `data` and returns how many: all of them, unless the
  // request completed (the rest belongs to the next, pipelined request) or
  // parsing failed.
  size_t feed(std::string_view data);

  State state() const { return state_; }
  bool complete() const { return state_ == State::Complete; }
  bool failed() const { return state_ == State::Failed; }
  bool started() const { return state_ != State::Idle; }
  bool head_complete() const { return state_ == State::Body || state_ == State::Complete; }
  // The client sent Expect: 100-continue and waits for a go-ahead before
  // sending the body (RFC 9110 §10.1.1).
  bool expects_continue() const { return expect_continue_ && state_ == State::Body && body_seen_ == 0; }
  size_t body_received() const { return body_seen_; }
  // Headers are valid from head_complete(), the body once complete().
  HttpRequest& request() { return request_; }
  const ParseError& error() const { return error_; }

 private:
  enum class Chunk { Size, Data, DataEnd, Trailer };

  size_t feed_head(std::string_view data);
  size_t feed_body(std::string_view data);
  size_t feed_chunked(std::string_view data);
  bool parse_head();  // on the whole head in head_; false: failed
  bool parse_request_line(std::string_view line);
  bool parse_field(std::string_view line);
  bool decide_framing();
  bool fail(int status, std::string message);

  ParserLimits limits_;
  State state_ = State::Idle;
  ParseError error_;
  HttpRequest request_;
  std::string head_;       // the head's bytes so far
  size_t scanned_ = 0;     // head_ bytes already searched for the blank line
  bool chunked_ = false;
  size_t remaining_ = 0;   // Content-Length bytes, or the current chunk's, still to come
  size_t body_seen_ = 0;   // body bytes received (for chunked: decoded)
  bool expect_continue_ = false;
  bool absolute_host_ = false;  // the target was absolute-form: its authority is the Host
  Chunk chunk_ = Chunk::Size;
  std::string line_;       // a chunk-size or trailer line being collected
  size_t trailer_bytes_ = 0;
};

}  // namespace qvl
