// One HTTP/1.1 request as the server hands it to a handler, and the response
// the handler fills in: a whole body, or a content provider that streams it
// in chunks. No sockets here; http_server.cpp reads and writes them.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qvl {

// Header fields in the order received. Names compare case-insensitively
// (RFC 9110 §5.1); values are kept as sent, without surrounding whitespace.
class HttpHeaders {
 public:
  using Field = std::pair<std::string, std::string>;

  // The first value of `name`, or `fallback`.
  const std::string& get(std::string_view name, const std::string& fallback = empty_) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }
  size_t count(std::string_view name) const;
  const std::string* find(std::string_view name) const;
  // Replaces every field of that name with one.
  void set(std::string name, std::string value);
  void add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }
  void erase(std::string_view name);
  const std::vector<Field>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }

 private:
  static inline const std::string empty_;
  std::vector<Field> fields_;
};

bool iequals(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method;   // "GET", "POST", ... (case-sensitive, RFC 9110 §9.1)
  std::string target;   // as sent: "/v1/jobs/abc?x=1"
  std::string path;     // target up to '?', percent-encoding kept
  std::string query;    // after '?', without it
  int version_minor = 1;  // HTTP/1.<minor>: 0 or 1
  HttpHeaders headers;
  std::string body;     // decoded (chunked framing removed)
  bool keep_alive = true;  // what the client asked for (RFC 9112 §9.3)

  std::string remote_addr;  // peer IP as text
  int remote_port = 0;
  // The route's captures: matches[0] the whole path, then each group.
  std::vector<std::string> matches;

  // True once the client has gone away (connection reset, or closed before
  // the answer); never true for a client that only half-closed. Set by the
  // server; cheap enough to poll every few milliseconds.
  std::function<bool()> client_gone;
  bool gone() const { return client_gone && client_gone(); }

  const std::string& header(std::string_view name) const { return headers.get(name); }
};

// Where a streamed body goes. write() returns false once the client is gone
// (or the write deadline passed): the provider should then stop.
class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  virtual bool write(std::string_view data) = 0;
  bool write(const char* data, size_t n) { return write(std::string_view(data, n)); }
  // The body is complete; the provider is not called again.
  void done() { done_ = true; }
  bool is_done() const { return done_; }

 private:
  bool done_ = false;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;
  std::string body;
  // A streamed body: called repeatedly until it calls sink.done() (the body
  // ends) or returns false (the body is cut off and the connection closed).
  std::function<bool(ChunkSink&)> provider;
  // After a streamed body, with whether it ended by done().
  std::function<void(bool completed)> on_end;

  void set_content(std::string data, std::string_view content_type) {
    body = std::move(data);
    headers.set("Content-Type", std::string(content_type));
  }
  void set_header(std::string name, std::string value) { headers.set(std::move(name), std::move(value)); }
  void set_provider(std::string_view content_type, std::function<bool(ChunkSink&)> p,
                    std::function<void(bool)> end = {}) {
    headers.set("Content-Type", std::string(content_type));
    provider = std::move(p);
    on_end = std::move(end);
  }
  bool streamed() const { return static_cast<bool>(provider); }
};

// "Not Found" for 404, "" for a code without a standard phrase.
const char* reason_phrase(int status);

}  // namespace qvl
