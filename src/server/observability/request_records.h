// Each HTTP request's record while it is served: its id, its route's name and
// the fields its log line and metrics will carry, which the handler (and a
// stream's provider) fill in as the request goes. Opened before routing,
// closed when the response is logged; shutdown waits for the open ones.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "http/http_message.h"
#include "http/http_router.h"

namespace qvl {

struct RequestRecord {
  std::string id;
  std::string route;  // the router's name for it: bounded cardinality
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::mutex mutex;  // a stream's provider writes while the logger may read
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();  // tokens, timings, outcome, error
};

class RequestRecords {
 public:
  // Routes are named by `router`'s routes (HttpRouter::name_of).
  explicit RequestRecords(const HttpRouter& router);

  // A new random id (16 hex digits).
  std::string new_id();
  // The route name for logs and metrics: the router's, "/ (page)" for
  // another GET, else "other" (raw paths would let clients grow the label
  // set without bound).
  std::string route_of(const HttpRequest& req) const;

  // A new record for `req`, with an id and its route.
  std::shared_ptr<RequestRecord> open(const HttpRequest& req);
  // The record of `req`: the open one, or a new one for a request opened
  // nowhere (e.g. refused while its body was read).
  std::shared_ptr<RequestRecord> of(const HttpRequest& req);
  // `req`'s open record, or null.
  std::shared_ptr<RequestRecord> find(const HttpRequest& req);
  // The response is logged: `req`'s record is no longer open.
  void close(const HttpRequest& req);
  // Waits up to `timeout` until no request but health probes and metrics
  // scrapes is open (streams end shortly after their tasks).
  void wait_until_idle(std::chrono::milliseconds timeout);

 private:
  // mutex_ held:
  std::string next_id();
  std::shared_ptr<RequestRecord> make(const HttpRequest& req);

  const HttpRouter& router_;
  std::mutex mutex_;
  std::condition_variable closed_;
  std::map<const HttpRequest*, std::shared_ptr<RequestRecord>> open_;
  std::mt19937_64 id_rng_;  // under mutex_
};

}  // namespace qvl
