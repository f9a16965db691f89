// A small libcurl client for the model hubs: HEAD (metadata), GET into memory
// (API answers) and GET into a file that resumes with HTTP Range. Transient
// failures (5xx, 429, timeouts, resets, refused connections) are retried with
// exponential backoff; what still fails is returned (an HTTP status) or
// thrown as NetworkError (no HTTP answer at all).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "util/error.h"

namespace qvl::hub {

// The server could not be reached or stopped answering: refused, DNS,
// timeout, reset. The message names the URL and curl's reason.
class NetworkError : public Error {
 public:
  using Error::Error;
};

// Writing a download failed for lack of space; the message says how much.
class DiskFullError : public Error {
 public:
  using Error::Error;
};

struct HttpSettings {
  std::string token;          // "Authorization: Bearer"; curl drops it on redirects to other hosts
  long connect_timeout_s = 10;
  long stall_timeout_s = 30;  // a transfer slower than 1 byte/s for this long is a timeout
  int max_retries = 5;        // retries after the first attempt (refused/DNS: at most 2)
  int retry_base_ms = 1000;   // wait base * 2^k before retry k, capped at 30 s
  std::function<void(const std::string&)> note;  // "retrying in 2 s: HTTP 503" lines; may be empty
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the last response, names lower-case
  std::string body;                            // API answers; for a failed download, its error page
  std::string url;                             // the URL that answered (after redirects)
  int attempts = 1;
  std::string header(const std::string& lower_name) const;
};

class HttpClient {
 public:
  explicit HttpClient(HttpSettings settings);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // HEAD with "Accept-Encoding: identity". Follows only relative redirects (a
  // renamed repo); a redirect to another host (the CDN of an LFS file) is
  // returned as is, since its headers carry the file's metadata.
  HttpResponse head(const std::string& url);

  // GET into memory, following redirects; a body over max_bytes is an error.
  HttpResponse get(const std::string& url, size_t max_bytes = 64u << 20);

  // GET appended to `path`, resuming from its current size (Range), each retry
  // resuming where the previous attempt stopped. Succeeds (status 200/206)
  // when the file holds expected_size bytes (if > 0). progress(bytes in file)
  // is called as data arrives. Throws DiskFullError on ENOSPC.
  HttpResponse download(const std::string& url, const std::string& path, uint64_t expected_size,
                        const std::function<void(uint64_t)>& progress);

  struct Attempt;  // per-request state shared with the curl callbacks

 private:
  void prepare(const std::string& url, Attempt& a);
  // Counts a failed attempt; true if it is transient and retries remain.
  bool should_retry(int curl_code, long status, bool made_progress, int& failures) const;
  void wait_before_retry(int failures, const HttpResponse& r, const std::string& why) const;

  HttpSettings settings_;
  void* curl_ = nullptr;  // CURL*, reused so connections are kept alive
};

// "https://host:port" of a URL; empty if it has no scheme.
std::string url_origin(const std::string& url);
// Percent-encodes everything but unreserved characters (and '/' if keep_slash).
std::string url_encode(const std::string& s, bool keep_slash);

}  // namespace qvl::hub
