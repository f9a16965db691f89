#include "http/http_message.h"

#include <algorithm>

namespace qvl {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

const std::string* HttpHeaders::find(std::string_view name) const {
  for (const Field& f : fields_)
    if (iequals(f.first, name)) return &f.second;
  return nullptr;
}

const std::string& HttpHeaders::get(std::string_view name, const std::string& fallback) const {
  const std::string* v = find(name);
  return v ? *v : fallback;
}

size_t HttpHeaders::count(std::string_view name) const {
  return static_cast<size_t>(
      std::count_if(fields_.begin(), fields_.end(), [&](const Field& f) { return iequals(f.first, name); }));
}

void HttpHeaders::set(std::string name, std::string value) {
  erase(name);
  fields_.emplace_back(std::move(name), std::move(value));
}

void HttpHeaders::erase(std::string_view name) {
  std::erase_if(fields_, [&](const Field& f) { return iequals(f.first, name); });
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 102: return "Processing";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "";
  }
}

}  // namespace qvl
