// Writes one response on a connected socket: status line, header fields,
// and the body — whole with Content-Length, or streamed from a provider in
// chunks (RFC 9112 §7.1; to an HTTP/1.0 client, until the connection closes).
// Each write must make progress within the write timeout.
#pragma once

#include <chrono>
#include <string>

#include "http/http_message.h"

namespace qvl {

struct WriteTarget {
  int fd = -1;
  std::chrono::milliseconds write_timeout{30000};
};

// Sends all of `data`; false when the peer is gone or no progress was made
// within the timeout.
bool send_all(const WriteTarget& t, std::string_view data);

// The status line and fields: adds Date, the framing (Content-Length or
// Transfer-Encoding) and Connection as `keep_alive` says.
std::string response_head(const HttpResponse& res, int version_minor, bool keep_alive);

// Writes `res` for `req`. `keep_alive` comes in as what both sides want and
// goes out false when the connection cannot carry another response (a
// stream cut off, a close-delimited body, a failed write).
bool write_response(const WriteTarget& t, const HttpRequest& req, HttpResponse& res, bool& keep_alive);

}  // namespace qvl
