// Which requests the server takes, judged from their headers before any
// route runs: the Host it is addressed to (a DNS-rebinding page reaches a
// loopback server under a foreign name), the Origin of a browser request (a
// page the user visits must not drive the API), and the type of a POST body
// (only JSON: text/plain and form bodies are what a cross-site page can post
// without a CORS preflight). Each check returns "" or the refusal's message.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qvl {

// --allowed-hosts: "auto" (bound to a loopback address: localhost,
// *.localhost and loopback IPs; bound elsewhere: any), "*" (any), or a
// comma-separated list of names; ".example.com" also admits its subdomains.
class HostPolicy {
 public:
  HostPolicy(const std::string& allowed_hosts, const std::string& bind_host);
  // `host_header`: the Host field as sent (a port, brackets for IPv6).
  std::string refusal(std::string_view host_header) const;

 private:
  bool any_ = false;
  bool loopback_ = false;
  std::vector<std::string> names_;  // lowercase
};

// The host part of an authority ("Example.com:8080" -> "example.com",
// "[::1]:80" -> "::1"), lowercase.
std::string host_of(std::string_view authority);
bool is_loopback_host(std::string_view host);  // localhost, *.localhost, 127.0.0.0/8, ::1

// A request's Origin (if it has one) must be the server's own (same
// authority as Host) or the one --cors-origin allows ("*": any).
std::string origin_refusal(std::string_view origin, std::string_view host_header, std::string_view cors_origin);

// A POST body must be declared JSON: application/json or a +json type,
// with no charset but UTF-8 (RFC 8259 §8.1).
std::string content_type_refusal(std::string_view content_type);

}  // namespace qvl
