#include "server/media.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "server/api_error.h"
#include "server/base64.h"
#include "util/error.h"

namespace qvl {
namespace {

bool starts_with_ci(const std::string& s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

[[noreturn]] void too_large(size_t bytes, size_t limit, const std::string& param) {
  throw ApiError(413, "image_too_large",
                 cat("the image is ", bytes, " bytes, over the limit of ", limit, " bytes (--max-image-bytes)"), param);
}

std::vector<uint8_t> from_data_uri(const std::string& url, const MediaOptions& o, const std::string& param) {
  const size_t comma = url.find(',');
  if (comma == std::string::npos) bad_request(param, "malformed data: URI (no comma)", "invalid_image_url");
  const std::string meta = url.substr(5, comma - 5);
  if (meta.size() < 7 || meta.compare(meta.size() - 7, 7, ";base64") != 0)
    bad_request(param, "a data: URI image must be base64-encoded (data:image/png;base64,...)", "invalid_image_url");
  const std::string_view payload = std::string_view(url).substr(comma + 1);
  if (base64_decoded_size(payload) > o.max_image_bytes + 2) too_large(base64_decoded_size(payload), o.max_image_bytes, param);
  size_t at = 0;
  auto bytes = base64_decode(payload, &at);
  if (!bytes) bad_request(param, cat("invalid base64 in the data: URI at character ", at), "invalid_base64");
  if (bytes->empty()) bad_request(param, "the data: URI holds no image bytes", "invalid_image");
  if (bytes->size() > o.max_image_bytes) too_large(bytes->size(), o.max_image_bytes, param);
  return std::move(*bytes);
}

std::vector<uint8_t> from_file(const std::string& url, const MediaOptions& o, const std::string& param) {
  namespace fs = std::filesystem;
  if (o.allowed_media_dir.empty())
    throw ApiError(403, "local_files_disabled",
                   "local image files are disabled on this server (start it with --allowed-media-dir)", param);
  std::string path = starts_with_ci(url, "file://") ? url.substr(7) : url;
  std::error_code ec;
  // Both sides canonical (symlinks and .. resolved) so nothing escapes the folder.
  const fs::path root = fs::canonical(o.allowed_media_dir, ec);
  fs::path p = fs::path(path).is_absolute() ? fs::path(path) : root / path;
  const fs::path real = fs::canonical(p, ec);
  if (ec || !fs::is_regular_file(real, ec))
    throw ApiError(400, "image_not_found", "the image file does not exist or is not a regular file", param);
  auto rel = real.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..")
    throw ApiError(403, "path_not_allowed", "the image file is outside the allowed media folder", param);
  const auto size = fs::file_size(real, ec);
  if (ec) throw ApiError(400, "image_not_found", "the image file cannot be read", param);
  if (size > o.max_image_bytes) too_large(size, o.max_image_bytes, param);
  std::ifstream in(real, std::ios::binary);
  std::vector<uint8_t> bytes(size);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
    throw ApiError(400, "image_not_found", "the image file cannot be read", param);
  return bytes;
}

struct Fetch {
  const MediaOptions* options;
  std::vector<uint8_t> bytes;
  bool over_limit = false;
  bool refused_address = false;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* f = static_cast<Fetch*>(user);
  if (f->bytes.size() + size * n > f->options->max_image_bytes) {
    f->over_limit = true;
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
  Fetch f{&o, {}, false, false};
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
  curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
  curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &f);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "qvl");
  const CURLcode rc = curl_easy_perform(c);
  if (f.refused_address)
    throw ApiError(403, "address_not_allowed",
                   "the image URL resolves to a loopback, private or link-local address, which this server refuses",
                   param);
  if (f.over_limit || rc == CURLE_FILESIZE_EXCEEDED) too_large(f.bytes.size() + 1, o.max_image_bytes, param);
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

bool private_v4(uint32_t a) {  // host byte order
  auto in = [a](uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
  return in(0x00000000, 8) || in(0x0A000000, 8) || in(0x7F000000, 8) || in(0xA9FE0000, 16) ||
         in(0xAC100000, 12) || in(0xC0A80000, 16) || in(0x64400000, 10) || in(0xC0000000, 24) ||
         in(0xE0000000, 4) || in(0xF0000000, 4);
}

}  // namespace

bool is_private_address(const std::string& ip) {
  in_addr v4{};
  if (inet_pton(AF_INET, ip.c_str(), &v4) == 1) return private_v4(ntohl(v4.s_addr));
  in6_addr v6{};
  if (inet_pton(AF_INET6, ip.c_str(), &v6) != 1) return true;  // not an address: refuse
  const uint8_t* b = v6.s6_addr;
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b, kMapped, 12) == 0)
    return private_v4(uint32_t{b[12]} << 24 | uint32_t{b[13]} << 16 | uint32_t{b[14]} << 8 | b[15]);
  bool zero_prefix = true;  // ::, ::1 and the deprecated IPv4-compatible forms
  for (int i = 0; i < 12; ++i) zero_prefix = zero_prefix && b[i] == 0;
  if (zero_prefix) return true;
  return (b[0] & 0xfe) == 0xfc ||                  // fc00::/7 unique local
         (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) ||  // fe80::/10 link-local
         b[0] == 0xff;                              // multicast
}

std::vector<uint8_t> fetch_image_bytes(const std::string& url, const MediaOptions& o, const std::string& param) {
  if (starts_with_ci(url, "data:")) return from_data_uri(url, o, param);
  if (starts_with_ci(url, "http://") || starts_with_ci(url, "https://")) return from_remote(url, o, param);
  if (starts_with_ci(url, "file://") || (!url.empty() && url.find("://") == std::string::npos))
    return from_file(url, o, param);
  bad_request(param, "unsupported image URL scheme (use a data: URI, or http(s) / a file if the server allows them)",
              "invalid_image_url");
}

}  // namespace qvl
