#include "http/http_parser.h"

#include <algorithm>
#include <cstdint>

namespace qvl {

namespace {

// tchar of RFC 9110 §5.6.2: the characters of a method or a field name.
bool is_tchar(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A line without its terminator: CRLF, or a bare LF, which RFC 9112 §2.2
// lets a recipient accept.
std::string_view strip_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// Whether a comma-separated header value lists `token` (Connection, Transfer-Encoding).
bool lists_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// Decimal digits only (RFC 9110 §8.6); false when empty, signed or too big.
bool parse_length(std::string_view s, size_t& out) {
  if (s.empty() || s.size() > 18) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  out = static_cast<size_t>(v);
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr size_t kMaxChunkLine = 1024;  // a size plus extensions nobody needs

}  // namespace

bool RequestParser::fail(int status, std::string message) {
  state_ = State::Failed;
  error_ = {status, std::move(message)};
  return false;
}

size_t RequestParser::feed(std::string_view data) {
  size_t used = 0;
  while (used < data.size() && state_ != State::Complete && state_ != State::Failed) {
    const std::string_view rest = data.substr(used);
    if (state_ == State::Idle) {
      // Empty lines before a request line are skipped (RFC 9112 §2.2), e.g.
      // a CRLF a client appended after a previous body.
      if (rest.front() == '\r' || rest.front() == '\n') {
        ++used;
        continue;
      }
      state_ = State::Head;
    }
    used += state_ == State::Head ? feed_head(rest) : feed_body(rest);
  }
  return used;
}

size_t RequestParser::feed_head(std::string_view data) {
  // Take bytes up to the head's limit only; finding the end in them decides.
  const size_t room = limits_.max_header_bytes + 4 - std::min(head_.size(), limits_.max_header_bytes + 4);
  const size_t take = std::min(data.size(), room);
  head_.append(data.data(), take);
  // The head ends at an empty line: "\n\r\n" or "\n\n".
  size_t end = std::string::npos, from = scanned_ > 0 ? scanned_ - 1 : 0;
  for (size_t i = from; i < head_.size(); ++i) {
    if (head_[i] != '\n') continue;
    if (i + 1 < head_.size() && head_[i + 1] == '\n') {
      end = i + 2;
      break;
    }
    if (i + 2 < head_.size() && head_[i + 1] == '\r' && head_[i + 2] == '\n') {
      end = i + 3;
      break;
    }
  }
  if (end == std::string::npos) {
    scanned_ = head_.size() >= 2 ? head_.size() - 2 : 0;
    const size_t line_end = head_.find('\n');
    if (line_end == std::string::npos && head_.size() > limits_.max_uri_bytes + 32)
      return fail(414, "the request line is longer than " + std::to_string(limits_.max_uri_bytes) + " bytes"), take;
    if (head_.size() > limits_.max_header_bytes)
      return fail(431, "the request header is larger than " + std::to_string(limits_.max_header_bytes) + " bytes"),
             take;
    return take;
  }
  if (end > limits_.max_header_bytes)
    return fail(431, "the request header is larger than " + std::to_string(limits_.max_header_bytes) + " bytes"), take;
  // Bytes after the blank line belong to the body (or the next request).
  const size_t extra = head_.size() - end;
  head_.resize(end);
  if (!parse_head()) return take - extra;
  state_ = remaining_ > 0 || chunked_ ? State::Body : State::Complete;
  return take - extra;
}

bool RequestParser::parse_head() {
  std::string_view head(head_);
  size_t pos = 0;
  bool first = true;
  while (pos < head.size()) {
    const size_t nl = head.find('\n', pos);
    const std::string_view line = strip_cr(head.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) break;  // the blank line that ends the head
    if (first) {
      if (!parse_request_line(line)) return false;
      first = false;
    } else if (!parse_field(line)) {
      return false;
    }
  }
  return decide_framing();
}

bool RequestParser::parse_request_line(std::string_view line) {
  // method SP request-target SP HTTP-version (RFC 9112 §3)
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "malformed request line (expected 'METHOD /path HTTP/1.1')");
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return fail(400, "malformed request method");
  if (target.size() > limits_.max_uri_bytes)
    return fail(414, "the request target is longer than " + std::to_string(limits_.max_uri_bytes) + " bytes");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' ||
      version[5] > '9' || version[7] < '0' || version[7] > '9')
    return fail(400, "malformed HTTP version");
  if (version[5] != '1') return fail(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  request_.version_minor = version[7] == '0' ? 0 : 1;
  for (char c : target)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return fail(400, "the request target holds a control character");
  // absolute-form (RFC 9112 §3.2.2): the authority replaces Host.
  std::string authority;
  if (target.size() > 7 && (target.substr(0, 7) == "http://" || target.substr(0, 8) == "https://")) {
    const size_t start = target.find("//") + 2;
    const size_t slash = target.find('/', start);
    authority = std::string(target.substr(start, slash - start));
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    if (authority.empty()) return fail(400, "an absolute request target without a host");
  }
  if (target.empty() || (target.front() != '/' && !(target == "*" && method == "OPTIONS")))
    return fail(400, "the request target must be a path starting with '/'");
  request_.method = std::string(method);
  request_.target = std::string(target);
  const size_t q = target.find('?');
  request_.path = std::string(target.substr(0, q));
  request_.query = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
  if (!authority.empty()) request_.headers.add("Host", authority), absolute_host_ = true;
  return true;
}

bool RequestParser::parse_field(std::string_view line) {
  // field-name ":" OWS field-value OWS (RFC 9112 §5)
  if (line.front() == ' ' || line.front() == '\t')  // obs-fold: rejected, as §5.2 allows
    return fail(400, "obsolete line folding in a header field");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return fail(400, "a header line without ':'");
  const std::string_view name = line.substr(0, colon);
  // No whitespace between name and colon (§5.1): it has smuggled requests past proxies.
  if (!is_token(name)) return fail(400, "malformed header field name");
  const std::string_view value = trim(line.substr(colon + 1));
  for (char c : value)
    if (c == '\0' || c == '\r' || c == '\n') return fail(400, "a header field value holds CR, LF or NUL");
  if (request_.headers.size() >= limits_.max_header_fields)
    return fail(431, "more than " + std::to_string(limits_.max_header_fields) + " header fields");
  // With an absolute-form target the authority given there is the Host.
  if (absolute_host_ && iequals(name, "Host")) return true;
  request_.headers.add(std::string(name), std::string(value));
  return true;
}

bool RequestParser::decide_framing() {
  HttpHeaders& h = request_.headers;
  const bool http11 = request_.version_minor == 1;
  // RFC 9112 §3.2: a 1.1 request without exactly one Host is a 400.
  const size_t hosts = h.count("Host");
  if (hosts > 1 || (http11 && hosts == 0)) return fail(400, hosts > 1 ? "more than one Host header" : "no Host header");

  const std::string& connection = h.get("Connection");
  request_.keep_alive = http11 ? !lists_token(connection, "close") : lists_token(connection, "keep-alive");

  const size_t lengths = h.count("Content-Length");
  if (h.has("Transfer-Encoding")) {
    // Both framings at once is how requests are smuggled (§6.3 item 3).
    if (lengths > 0) return fail(400, "both Transfer-Encoding and Content-Length");
    if (!http11) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (h.count("Transfer-Encoding") > 1 || !iequals(trim(h.get("Transfer-Encoding")), "chunked"))
      return fail(501, "unsupported Transfer-Encoding (only 'chunked')");
    chunked_ = true;
  } else if (lengths > 0) {
    size_t n = 0;
    if (lengths > 1) return fail(400, "more than one Content-Length");
    if (!parse_length(h.get("Content-Length"), n)) return fail(400, "malformed Content-Length");
    if (n > limits_.max_body_bytes)
      return fail(413, "the request body is " + std::to_string(n) + " bytes, over the limit of " +
                           std::to_string(limits_.max_body_bytes) + " bytes");
    remaining_ = n;
  }
  expect_continue_ = http11 && iequals(h.get("Expect"), "100-continue") && (chunked_ || remaining_ > 0);
  return true;
}

size_t RequestParser::feed_body(std::string_view data) {
  if (chunked_) return feed_chunked(data);
  const size_t take = std::min(data.size(), remaining_);
  request_.body.append(data.data(), take);
  remaining_ -= take;
  body_seen_ += take;
  if (remaining_ == 0) state_ = State::Complete;
  return take;
}

// chunked-body = *chunk last-chunk trailer-section CRLF (RFC 9112 §7.1)
size_t RequestParser::feed_chunked(std::string_view data) {
  size_t used = 0;
  while (used < data.size() && state_ == State::Body) {
    if (chunk_ == Chunk::Data) {
      const size_t take = std::min(data.size() - used, remaining_);
      request_.body.append(data.data() + used, take);
      used += take;
      remaining_ -= take;
      body_seen_ += take;
      if (remaining_ == 0) chunk_ = Chunk::DataEnd;
      continue;
    }
    // Size, DataEnd and Trailer are lines.
    const char c = data[used++];
    if (c != '\n') {
      if (line_.size() >= kMaxChunkLine) return fail(400, "a chunk-size line is too long"), used;
      line_ += c;
      continue;
    }
    const std::string_view line = strip_cr(line_);
    if (chunk_ == Chunk::DataEnd) {
      if (!line.empty()) return fail(400, "chunk data longer than its size"), used;
      chunk_ = Chunk::Size;
    } else if (chunk_ == Chunk::Size) {
      // chunk-size [ chunk-ext ]: the extensions are ignored (§7.1.1).
      const std::string_view size = trim(line.substr(0, line.find(';')));
      if (size.empty() || size.size() > 15) return fail(400, "malformed chunk size"), used;
      size_t n = 0;
      for (char d : size) {
        const int v = hex_digit(d);
        if (v < 0) return fail(400, "malformed chunk size"), used;
        n = n * 16 + static_cast<size_t>(v);
      }
      if (n > limits_.max_body_bytes - std::min(body_seen_, limits_.max_body_bytes))
        return fail(413, "the request body is over the limit of " + std::to_string(limits_.max_body_bytes) + " bytes"),
               used;
      remaining_ = n;
      chunk_ = n == 0 ? Chunk::Trailer : Chunk::Data;
    } else {  // Trailer: fields are counted against the head's limit and dropped
      trailer_bytes_ += line_.size() + 1;
      if (head_.size() + trailer_bytes_ > limits_.max_header_bytes)
        return fail(431, "the chunked trailer section is too large"), used;
      if (line.empty()) state_ = State::Complete;
    }
    line_.clear();
  }
  return used;
}

}  // namespace qvl
