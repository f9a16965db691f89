#include "server/media/media.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <memory>

#include "server/requests/api_error.h"
#include "server/media/base64.h"
#include "server/media/media_file.h"
#include "util/error.h"

namespace qvl {
namespace {

bool starts_with_ci(const std::string& s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// `how_known` says where a lower bound comes from; empty when `bytes` is exact.
[[noreturn]] void too_large(uint64_t bytes, size_t limit, const std::string& param, std::string_view how_known = "") {
  const std::string size =
      how_known.empty() ? cat(bytes, " bytes") : cat("at least ", bytes, " bytes (", how_known, ")");
  throw ApiError(413, "image_too_large",
                 cat("the image is ", size, ", over the limit of ", limit, " bytes (--max-image-bytes)"), param);
}

std::vector<uint8_t> from_data_uri(const std::string& url, const MediaOptions& o, const std::string& param) {
  const size_t comma = url.find(',');
  if (comma == std::string::npos) bad_request(param, "malformed data: URI (no comma)", "invalid_image_url");
  const std::string meta = url.substr(5, comma - 5);
  if (meta.size() < 7 || meta.compare(meta.size() - 7, 7, ";base64") != 0)
    bad_request(param, "a data: URI image must be base64-encoded (data:image/png;base64,...)", "invalid_image_url");
  const std::string_view payload = std::string_view(url).substr(comma + 1);
  // Up to 2 bytes of the estimate are padding: refuse only what is over for sure.
  const size_t estimate = base64_decoded_size(payload);
  if (estimate > o.max_image_bytes + 2) too_large(estimate - 2, o.max_image_bytes, param, "from the base64 length");
  size_t at = 0;
  auto bytes = base64_decode(payload, &at);
  if (!bytes) bad_request(param, cat("invalid base64 in the data: URI at character ", at), "invalid_base64");
  if (bytes->empty()) bad_request(param, "the data: URI holds no image bytes", "invalid_image");
  if (bytes->size() > o.max_image_bytes) too_large(bytes->size(), o.max_image_bytes, param);
  return std::move(*bytes);
}

std::vector<uint8_t> from_file(const std::string& url, const MediaOptions& o, const std::string& param) {
  if (o.allowed_media_dir.empty())
    throw ApiError(403, "local_files_disabled",
                   "local image files are disabled on this server (start it with --allowed-media-dir)", param);
  return read_media_file(o.allowed_media_dir, starts_with_ci(url, "file://") ? url.substr(7) : url, o.max_image_bytes,
                         param);
}

struct Fetch {
  const MediaOptions* options;
  std::vector<uint8_t> bytes;
  bool over_limit = false;
  uint64_t seen_bytes = 0;  // when over the limit: what had arrived, with the piece that crossed it
  bool refused_address = false;
  // The Content-Length of the response being received (-1: none). curl refuses
  // a body declared over CURLOPT_MAXFILESIZE before it arrives, and its own
  // CURLINFO_CONTENT_LENGTH_DOWNLOAD_T is not set by then.
  int64_t declared_length = -1;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* f = static_cast<Fetch*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    f->declared_length = -1;  // a new response (after a redirect or a 100 Continue)
  } else if (starts_with_ci(line, "content-length:")) {
    size_t at = line.find_first_not_of(" \t", 15);
    int64_t v = 0;
    const char* end = line.data() + line.size();
    if (at != std::string::npos) {
      auto [p, ec] = std::from_chars(line.data() + at, end, v);
      if (ec == std::errc() && v >= 0) f->declared_length = v;
    }
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* f = static_cast<Fetch*>(user);
  if (f->bytes.size() + size * n > f->options->max_image_bytes) {
    f->over_limit = true;
    f->seen_bytes = f->bytes.size() + size * n;
    return 0;  // aborts the transfer
  }
  f->bytes.insert(f->bytes.end(), data, data + size * n);
  return size * n;
}

// Called for every connection curl opens (also after redirects), with the
// address already resolved: the one place a DNS answer cannot dodge the check.
curl_socket_t open_socket(void* user, curlsocktype, struct curl_sockaddr* a) {
  auto* f = static_cast<Fetch*>(user);
  char ip[INET6_ADDRSTRLEN] = {};
  if (a->family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a->addr)->sin_addr, ip, sizeof ip);
  else if (a->family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&a->addr)->sin6_addr, ip, sizeof ip);
  if (!f->options->allow_private_remote && (ip[0] == 0 || is_private_address(ip))) {
    f->refused_address = true;
    return CURL_SOCKET_BAD;
  }
  return socket(a->family, a->socktype, a->protocol);
}

std::vector<uint8_t> from_remote(const std::string& url, const MediaOptions& o, const std::string& param) {
  if (!o.allow_remote)
    throw ApiError(403, "remote_images_disabled",
                   "remote image URLs are disabled on this server (start it with --allow-remote-images)", param);
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw ApiError(500, "internal_error", "cannot start an HTTP client", param);
  Fetch f{&o, {}, false, 0, false};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(o.remote_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(o.max_image_bytes));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &f);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &f);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "qvl");
  const CURLcode rc = curl_easy_perform(c);
  if (f.refused_address)
    throw ApiError(403, "address_not_allowed",
                   "the image URL resolves to a loopback, private or link-local address, which this server refuses",
                   param);
  if (f.over_limit) too_large(f.seen_bytes, o.max_image_bytes, param, "what had arrived when the download was stopped");
  if (rc == CURLE_FILESIZE_EXCEEDED) {
    // curl refuses from the Content-Length before the body arrives.
    if (f.declared_length > static_cast<int64_t>(o.max_image_bytes))
      too_large(static_cast<uint64_t>(f.declared_length), o.max_image_bytes, param);
    too_large(o.max_image_bytes + 1, o.max_image_bytes, param, "curl stopped the download at the limit");
  }
  if (rc == CURLE_OPERATION_TIMEDOUT)
    throw ApiError(400, "image_fetch_timeout", cat("fetching the image URL took over ", o.remote_timeout_s, " s"), param);
  if (rc != CURLE_OK)
    throw ApiError(400, "image_fetch_failed", cat("cannot fetch the image URL: ", curl_easy_strerror(rc)), param);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200)
    throw ApiError(400, "image_fetch_failed", cat("fetching the image URL returned HTTP ", status), param);
  return std::move(f.bytes);
}

}  // namespace

std::vector<uint8_t> fetch_media_bytes(const std::string& url, const MediaOptions& o, const std::string& param) {
  if (starts_with_ci(url, "data:")) return from_data_uri(url, o, param);
  if (starts_with_ci(url, "http://") || starts_with_ci(url, "https://")) return from_remote(url, o, param);
  if (starts_with_ci(url, "file://") || (!url.empty() && url.find("://") == std::string::npos))
    return from_file(url, o, param);
  bad_request(param, "unsupported image URL scheme (use a data: URI, or http(s) / a file if the server allows them)",
              "invalid_image_url");
}

}  // namespace qvl
