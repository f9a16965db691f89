#include "http/http_router.h"

namespace qvl {

void HttpRouter::add(std::string method, std::string name, const std::string& pattern, Handler h) {
  routes_.push_back({std::move(method), std::move(name), std::regex(pattern), std::move(h)});
}

HttpRouter::Match HttpRouter::dispatch(HttpRequest& req, HttpResponse& res) const {
  const std::string& method = req.method == "HEAD" ? std::string("GET") : req.method;
  bool path_known = false;
  for (const Route& r : routes_) {
    std::smatch m;
    if (!std::regex_match(req.path, m, r.pattern)) continue;
    if (r.method != method) {
      path_known = true;
      continue;
    }
    req.matches.assign(m.begin(), m.end());
    r.handler(req, res);
    return Match::Found;
  }
  return path_known ? Match::NoMethod : Match::NoPath;
}

const std::string* HttpRouter::name_of(const std::string& path) const {
  for (const Route& r : routes_)
    if (std::regex_match(path, r.pattern)) return &r.name;
  for (const Route& r : routes_) {
    const size_t placeholder = r.name.find('{');
    if (placeholder != std::string::npos && path.compare(0, placeholder, r.name, 0, placeholder) == 0) return &r.name;
  }
  return nullptr;
}

bool HttpRouter::has(std::string_view method, std::string_view name) const {
  for (const Route& r : routes_)
    if (r.method == method && r.name == name) return true;
  return false;
}

}  // namespace qvl
