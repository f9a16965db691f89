#include "server/observability/request_records.h"

#include <cstdio>

namespace qvl {

RequestRecords::RequestRecords(const HttpRouter& router) : router_(router), id_rng_(std::random_device{}()) {}

std::string RequestRecords::new_id() {
  std::lock_guard lock(mutex_);
  return next_id();
}

std::string RequestRecords::next_id() {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id_rng_()));
  return buf;
}

std::string RequestRecords::route_of(const HttpRequest& req) const {
  if (const std::string* name = router_.name_of(req.path)) return *name;
  if (req.method == "GET" || req.method == "HEAD") return "/ (page)";
  return "other";
}

std::shared_ptr<RequestRecord> RequestRecords::make(const HttpRequest& req) {
  auto r = std::make_shared<RequestRecord>();
  r->id = next_id();
  r->route = route_of(req);
  return r;
}

std::shared_ptr<RequestRecord> RequestRecords::open(const HttpRequest& req) {
  std::lock_guard lock(mutex_);
  return open_[&req] = make(req);
}

std::shared_ptr<RequestRecord> RequestRecords::of(const HttpRequest& req) {
  std::lock_guard lock(mutex_);
  auto& r = open_[&req];
  if (!r) r = make(req);
  return r;
}

std::shared_ptr<RequestRecord> RequestRecords::find(const HttpRequest& req) {
  std::lock_guard lock(mutex_);
  auto it = open_.find(&req);
  return it == open_.end() ? nullptr : it->second;
}

void RequestRecords::close(const HttpRequest& req) {
  {
    std::lock_guard lock(mutex_);
    open_.erase(&req);
  }
  closed_.notify_all();
}

void RequestRecords::wait_until_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  closed_.wait_for(lock, timeout, [&] {
    for (const auto& [req, rec] : open_)
      if (rec->route != "/health" && rec->route != "/metrics") return false;
    return true;
  });
}

}  // namespace qvl
