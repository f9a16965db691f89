#include "io/hub_http.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace qvl::hub {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// curl_global_init is not thread-safe; run it once before the first handle.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool is_connect_failure(int code) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY;
}

bool is_transient(int code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return is_connect_failure(code);
  }
}

bool is_transient_status(long status) { return status == 429 || status >= 500; }

off_t file_size(int fd) {
  struct stat st;
  return ::fstat(fd, &st) == 0 ? st.st_size : 0;
}

}  // namespace

// Per-request state the curl callbacks write into.
struct HttpClient::Attempt {
  HttpResponse response;
  size_t max_body = 0;
  bool body_too_big = false;
  // Download state: the file, where this attempt started, what happened.
  int fd = -1;
  off_t start = 0;
  bool body_started = false;
  uint64_t received = 0;
  int write_errno = 0;
  const std::function<void(uint64_t)>* progress = nullptr;
  CURL* curl = nullptr;
};

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

static size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<HttpClient::Attempt*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    a->response.headers.clear();  // a new response in a redirect chain
  } else if (size_t colon = line.find(':'); colon != std::string::npos) {
    a->response.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * n;
}

static size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<HttpClient::Attempt*>(user);
  size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
  bool into_file = a->fd >= 0 && (status == 200 || status == 206);
  if (!into_file) {
    if (a->response.body.size() + len > a->max_body) {
      if (a->fd >= 0) return len;  // a failed download's error page: its start is enough
      a->body_too_big = true;
      return 0;
    }
    a->response.body.append(data, len);
    return len;
  }
  if (!a->body_started) {
    a->body_started = true;
    if (status == 200 && a->start > 0) {
      // The server ignored our Range and sends the whole file: start over.
      if (::ftruncate(a->fd, 0) != 0 || ::lseek(a->fd, 0, SEEK_SET) != 0) {
        a->write_errno = errno;
        return 0;
      }
      a->start = 0;
    }
  }
  for (size_t done = 0; done < len;) {
    ssize_t w = ::write(a->fd, data + done, len - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      a->write_errno = errno;
      return 0;
    }
    done += static_cast<size_t>(w);
  }
  a->received += len;
  if (a->progress && *a->progress) (*a->progress)(static_cast<uint64_t>(a->start) + a->received);
  return len;
}

HttpClient::HttpClient(HttpSettings settings) : settings_(std::move(settings)) {
  init_curl_once();
  curl_ = curl_easy_init();
  if (!curl_) fail("cannot initialise libcurl");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

void HttpClient::prepare(const std::string& url, Attempt& a) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  a.curl = c;
  a.response.url = url;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "qvl");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, settings_.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, settings_.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
}

bool HttpClient::should_retry(int code, long status, bool made_progress, int& failures) const {
  bool transient = code != CURLE_OK ? is_transient(code) : is_transient_status(status);
  if (!transient) return false;
  if (made_progress) failures = 0;  // a flaky but moving transfer keeps going
  ++failures;
  // No network at all should fail fast: the user has better options (a mirror, a local folder).
  int limit = is_connect_failure(code) ? std::min(settings_.max_retries, 2) : settings_.max_retries;
  return failures <= limit;
}

void HttpClient::wait_before_retry(int failures, const HttpResponse& r, const std::string& why) const {
  long ms = settings_.retry_base_ms * (1L << std::min(failures - 1, 20));
  ms = std::min(ms, 30000L);
  if (std::string ra = r.header("retry-after"); !ra.empty() && std::all_of(ra.begin(), ra.end(), ::isdigit))
    ms = std::max(ms, std::min(std::stol(ra), 60L) * 1000);
  if (settings_.note) settings_.note(cat("retrying in ", ms / 1000.0, " s (", why, ")"));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

HttpResponse HttpClient::head(const std::string& url) {
  std::string current = url;
  for (int hops = 0;; ++hops) {
    HttpResponse r;
    int failures = 0;
    for (int attempt = 1;; ++attempt) {
      Attempt a;
      a.max_body = 1 << 20;
      prepare(current, a);
      CURL* c = static_cast<CURL*>(curl_);
      curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
      curl_easy_setopt(c, CURLOPT_TIMEOUT, settings_.connect_timeout_s + settings_.stall_timeout_s);
      curl_slist* h = curl_slist_append(nullptr, "Accept-Encoding: identity");
      if (!settings_.token.empty()) h = curl_slist_append(h, ("Authorization: Bearer " + settings_.token).c_str());
      curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
      CURLcode code = curl_easy_perform(c);
      curl_slist_free_all(h);
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.response.status);
      a.response.attempts = attempt;
      r = std::move(a.response);
      if (!should_retry(code, r.status, false, failures)) {
        if (code != CURLE_OK) throw NetworkError(cat(curl_easy_strerror(code), " (HEAD ", current, ")"));
        break;
      }
      wait_before_retry(failures, r, code != CURLE_OK ? curl_easy_strerror(code) : cat("HTTP ", r.status));
    }
    std::string location = r.header("location");
    bool redirect = r.status >= 300 && r.status < 400 && !location.empty();
    if (!redirect || location.front() != '/' || hops >= 10) return r;
    current = url_origin(current) + location;
  }
}

HttpResponse HttpClient::get(const std::string& url, size_t max_bytes) {
  int failures = 0;
  for (int attempt = 1;; ++attempt) {
    Attempt a;
    a.max_body = max_bytes;
    prepare(url, a);
    CURL* c = static_cast<CURL*>(curl_);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // any compression curl can decode
    curl_slist* h = nullptr;
    if (!settings_.token.empty()) h = curl_slist_append(h, ("Authorization: Bearer " + settings_.token).c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode code = curl_easy_perform(c);
    curl_slist_free_all(h);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.response.status);
    if (a.body_too_big) fail("answer of ", url, " is larger than ", max_bytes, " bytes");
    a.response.attempts = attempt;
    if (!should_retry(code, a.response.status, false, failures)) {
      if (code != CURLE_OK) throw NetworkError(cat(curl_easy_strerror(code), " (GET ", url, ")"));
      return a.response;
    }
    wait_before_retry(failures, a.response, code != CURLE_OK ? curl_easy_strerror(code) : cat("HTTP ", a.response.status));
  }
}

HttpResponse HttpClient::download(const std::string& url, const std::string& path, uint64_t expected_size,
                                  const std::function<void(uint64_t)>& progress) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write ", path, ": ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  int failures = 0;
  for (int attempt = 1;; ++attempt) {
    Attempt a;
    a.max_body = 64 << 10;
    a.fd = fd;
    a.progress = &progress;
    a.start = file_size(fd);
    if (expected_size > 0 && static_cast<uint64_t>(a.start) > expected_size) {
      if (::ftruncate(fd, 0) != 0) fail("cannot truncate ", path, ": ", std::strerror(errno));
      a.start = 0;  // longer than the file can be: not ours to resume
    }
    if (expected_size > 0 && static_cast<uint64_t>(a.start) == expected_size) {
      a.response.status = 200;  // a previous run finished the bytes but not the rename
      return a.response;
    }
    if (::lseek(fd, a.start, SEEK_SET) < 0) fail("cannot seek in ", path, ": ", std::strerror(errno));
    prepare(url, a);
    CURL* c = static_cast<CURL*>(curl_);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_slist* h = curl_slist_append(nullptr, "Accept-Encoding: identity");
    if (!settings_.token.empty()) h = curl_slist_append(h, ("Authorization: Bearer " + settings_.token).c_str());
    if (a.start > 0) h = curl_slist_append(h, cat("Range: bytes=", a.start, "-").c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode code = curl_easy_perform(c);
    curl_slist_free_all(h);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    a.response.status = status;
    a.response.attempts = attempt;
    char* effective = nullptr;
    if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK && effective) a.response.url = effective;
    if (a.write_errno == ENOSPC || a.write_errno == EDQUOT) {
      uint64_t have = static_cast<uint64_t>(file_size(fd));
      throw DiskFullError(cat("no space left on the disk while writing ", path,
                              expected_size > have ? cat(" (", expected_size - have, " more bytes needed)") : "",
                              "; free some space or set HF_HUB_CACHE to a larger disk, then re-run to resume"));
    }
    if (a.write_errno) fail("cannot write ", path, ": ", std::strerror(a.write_errno));
    uint64_t have = static_cast<uint64_t>(file_size(fd));
    if (code == CURLE_OK && status == 416 && a.start > 0) {
      // Our partial file does not fit the server's: drop it and start over.
      if (::ftruncate(fd, 0) != 0) fail("cannot truncate ", path, ": ", std::strerror(errno));
      if (++failures <= settings_.max_retries) continue;
    }
    bool ok_status = status == 200 || status == 206;
    bool short_body = code == CURLE_OK && ok_status && expected_size > 0 && have < expected_size;
    if (code == CURLE_OK && ok_status && !short_body) return a.response;
    int why_code = short_body ? CURLE_PARTIAL_FILE : code;
    if (!should_retry(why_code, status, a.received > 0, failures)) {
      if (why_code != CURLE_OK)
        throw NetworkError(cat(short_body ? "transfer ended early" : curl_easy_strerror(code), " after ", have,
                               expected_size ? cat(" of ", expected_size) : "", " bytes (GET ", url, ")"));
      return a.response;
    }
    wait_before_retry(failures, a.response,
                      why_code != CURLE_OK ? cat(curl_easy_strerror(static_cast<CURLcode>(why_code)), " at byte ", have)
                                           : cat("HTTP ", status));
  }
}

std::string url_origin(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  size_t path = url.find('/', scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

std::string url_encode(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace qvl::hub
