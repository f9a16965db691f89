// Routes of an HTTP server: a method and a path pattern (a regular
// expression matched against the whole path) to a handler. Patterns are
// tried in the order added; HEAD is answered by the GET route. Each route has
// a name, the one list of routes the server's logs and checks read.
#pragma once

#include <functional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_message.h"

namespace qvl {

class HttpRouter {
 public:
  using Handler = std::function<void(HttpRequest&, HttpResponse&)>;
  enum class Match { Found, NoPath, NoMethod };

  // A route at a literal path, which is also its name.
  void get(const std::string& path, Handler h) { add("GET", path, path, std::move(h)); }
  void post(const std::string& path, Handler h) { add("POST", path, path, std::move(h)); }
  void del(const std::string& path, Handler h) { add("DELETE", path, path, std::move(h)); }
  // A route whose path has a part `pattern` captures; `name` is the path as
  // logs and metrics call it, that part a {placeholder} ("/v1/jobs/{id}").
  void get(const std::string& name, const std::string& pattern, Handler h) { add("GET", name, pattern, std::move(h)); }
  void del(const std::string& name, const std::string& pattern, Handler h) { add("DELETE", name, pattern, std::move(h)); }
  void add(std::string method, std::string name, const std::string& pattern, Handler h);

  // Runs the handler of the first route that matches, with req.matches set
  // to its captures. Without a route: NoPath, or NoMethod when another
  // method has one for this path (the caller answers 404 / 405).
  Match dispatch(HttpRequest& req, HttpResponse& res) const;

  // The name of the route `path` is for, whatever the method: the first
  // whose pattern matches, else one whose name's literal part (up to its
  // placeholder) begins the path, so a malformed id is still counted, logged
  // and refused as that route's. Null when no route is for it.
  const std::string* name_of(const std::string& path) const;
  // Whether a route of that method has that name.
  bool has(std::string_view method, std::string_view name) const;

 private:
  struct Route {
    std::string method;
    std::string name;
    std::regex pattern;
    Handler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace qvl
