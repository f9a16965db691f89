#include "server/requests/request_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace qvl {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// What clients may see of a header value in an error: cut short, printable.
std::string shown(std::string_view v) {
  std::string out;
  for (char c : v.substr(0, 100)) out += (c >= ' ' && c < 127) ? c : '?';
  return out;
}

// "http://Host:80" -> "host" (the port a scheme implies is dropped).
std::string authority_without_default_port(std::string_view scheme, std::string_view authority) {
  std::string a = lower(authority);
  if ((scheme == "http" && ends_with(a, ":80")) ) a.resize(a.size() - 3);
  else if (scheme == "https" && ends_with(a, ":443")) a.resize(a.size() - 4);
  return a;
}

}  // namespace

std::string host_of(std::string_view authority) {
  authority = trim(authority);
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    return lower(authority.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1));
  }
  const size_t colon = authority.find(':');
  return lower(authority.substr(0, colon));
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || ends_with(host, ".localhost")) return true;
  in_addr v4{};
  if (inet_pton(AF_INET, std::string(host).c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, std::string(host).c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

HostPolicy::HostPolicy(const std::string& allowed_hosts, const std::string& bind_host) {
  if (allowed_hosts == "*") {
    any_ = true;
  } else if (allowed_hosts.empty() || allowed_hosts == "auto") {
    // A server bound to loopback is only reachable by name through a
    // loopback name; any other name is a rebinding attack's.
    loopback_ = is_loopback_host(host_of(bind_host));
    any_ = !loopback_;
  } else {
    std::string_view rest = allowed_hosts;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string name = lower(trim(rest.substr(0, comma)));
      if (name == "*") any_ = true;
      else if (!name.empty()) names_.push_back(name);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
}

std::string HostPolicy::refusal(std::string_view host_header) const {
  if (any_) return "";
  const std::string host = host_of(host_header);
  if (loopback_ && is_loopback_host(host)) return "";
  for (const std::string& n : names_)
    if (host == n || (n.front() == '.' && (ends_with(host, n) || host == n.substr(1)))) return "";
  return "the Host '" + shown(host_header) + "' is not a name of this server (see --allowed-hosts)";
}

std::string origin_refusal(std::string_view origin, std::string_view host_header, std::string_view cors_origin) {
  if (cors_origin == "*") return "";
  if (!cors_origin.empty() && origin == cors_origin) return "";
  // scheme "://" authority, nothing after (RFC 6454 §6.1); "null" is never our own.
  const size_t sep = origin.find("://");
  if (sep != std::string_view::npos) {
    const std::string scheme = lower(origin.substr(0, sep));
    const std::string_view authority = origin.substr(sep + 3);
    if ((scheme == "http" || scheme == "https") && !authority.empty() &&
        authority_without_default_port(scheme, authority) == authority_without_default_port(scheme, trim(host_header)))
      return "";
  }
  return "cross-origin request from '" + shown(origin) + "' refused (see --cors-origin)";
}

std::string content_type_refusal(std::string_view content_type) {
  const size_t semi = content_type.find(';');
  const std::string type = lower(trim(content_type.substr(0, semi)));
  const bool json = type == "application/json" || (type.rfind("application/", 0) == 0 && ends_with(type, "+json"));
  if (!json) {
    if (type.empty()) return "the request has no Content-Type; send 'Content-Type: application/json'";
    return "the body's Content-Type is '" + shown(type) + "'; send 'Content-Type: application/json'";
  }
  // Parameters: only charset matters, and JSON is UTF-8.
  std::string_view params = semi == std::string_view::npos ? std::string_view() : content_type.substr(semi + 1);
  while (!params.empty()) {
    const size_t next = params.find(';');
    const std::string_view p = trim(params.substr(0, next));
    const size_t eq = p.find('=');
    if (eq != std::string_view::npos && lower(trim(p.substr(0, eq))) == "charset") {
      std::string cs = lower(trim(p.substr(eq + 1)));
      if (cs.size() >= 2 && cs.front() == '"' && cs.back() == '"') cs = cs.substr(1, cs.size() - 2);
      if (cs != "utf-8" && cs != "utf8") return "the body's charset is '" + shown(cs) + "'; JSON bodies are UTF-8";
    }
    if (next == std::string_view::npos) break;
    params.remove_prefix(next + 1);
  }
  return "";
}

}  // namespace qvl
