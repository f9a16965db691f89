// libFuzzer target: HTTP request bytes to RequestParser, as they would come
// off a socket: split into pieces (sizes from the first byte), pipelined
// requests parsed one after another. The parser never throws; a crash, a
// sanitizer report, a hang, consuming more than it was given, or a body
// over its limit is a bug. Limits are small so a fuzzed length cannot make
// one run legitimately allocate much.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/http_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 64;  // bytes per read
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  qvl::ParserLimits limits;
  limits.max_header_bytes = 4096;
  limits.max_uri_bytes = 1024;
  limits.max_header_fields = 32;
  limits.max_body_bytes = 1 << 16;
  for (int requests = 0; requests < 64 && !rest.empty(); ++requests) {
    qvl::RequestParser p(limits);
    size_t offered = 0;
    while (!rest.empty() && !p.complete() && !p.failed()) {
      const std::string_view piece = rest.substr(0, step);
      const size_t used = p.feed(piece);
      if (used > piece.size()) __builtin_trap();
      // Only a finished parser leaves bytes unconsumed.
      if (used < piece.size() && !p.complete() && !p.failed()) __builtin_trap();
      rest.remove_prefix(used);
      offered += used;
    }
    if (p.failed()) {
      const int s = p.error().status;
      if (s < 400 || s > 505 || p.error().message.empty()) __builtin_trap();
      break;  // the connection would close
    }
    if (!p.complete()) break;  // waiting for more bytes
    if (p.request().body.size() > limits.max_body_bytes) __builtin_trap();
    if (p.request().path.empty() || p.request().path.size() > limits.max_uri_bytes) __builtin_trap();
    (void)offered;
  }
  return 0;
}
