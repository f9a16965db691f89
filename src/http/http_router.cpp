#include "http/http_router.h"

namespace qvl {

void HttpRouter::add(std::string method, const std::string& pattern, Handler h) {
  routes_.push_back({std::move(method), std::regex(pattern), std::move(h)});
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

}  // namespace qvl
