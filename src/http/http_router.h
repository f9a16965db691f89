// Routes of an HTTP server: a method and a path pattern (a regular
// expression matched against the whole path) to a handler. Patterns are
// tried in the order added; HEAD is answered by the GET route.
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "http/http_message.h"

namespace qvl {

class HttpRouter {
 public:
  using Handler = std::function<void(HttpRequest&, HttpResponse&)>;
  enum class Match { Found, NoPath, NoMethod };

  void get(const std::string& pattern, Handler h) { add("GET", pattern, std::move(h)); }
  void post(const std::string& pattern, Handler h) { add("POST", pattern, std::move(h)); }
  void del(const std::string& pattern, Handler h) { add("DELETE", pattern, std::move(h)); }
  void add(std::string method, const std::string& pattern, Handler h);

  // Runs the handler of the first route that matches, with req.matches set
  // to its captures. Without a route: NoPath, or NoMethod when another
  // method has one for this path (the caller answers 404 / 405).
  Match dispatch(HttpRequest& req, HttpResponse& res) const;

 private:
  struct Route {
    std::string method;
    std::regex pattern;
    Handler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace qvl
