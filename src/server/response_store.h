// The last responses of POST /v1/responses, kept in memory so a request can
// continue one with `previous_response_id` (and GET /v1/responses/{id} can
// return it). Bounded twice: at most `max_entries` responses and about
// `max_bytes` of JSON text (an input image's data: URI counts in full); the
// oldest go first. Nothing is written to disk. Safe from any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace qvl {

class ResponseStore {
 public:
  struct Entry {
    std::string id;  // "resp_…"
    // The conversation this response ends: the items of the response it
    // continued, its own input items, then its output items (Responses
    // items: messages, function_call, function_call_output). `instructions`
    // are not items: OpenAI does not carry them over either.
    nlohmann::ordered_json items = nlohmann::ordered_json::array();
    nlohmann::ordered_json response;  // the Response object as returned
  };

  explicit ResponseStore(size_t max_entries = 64, size_t max_bytes = size_t{256} << 20);

  void put(Entry entry);
  std::shared_ptr<const Entry> get(const std::string& id) const;
  // The item whose "id" is `item_id` in any stored conversation, newest
  // first (for input items {"type": "item_reference", "id"}).
  std::optional<nlohmann::ordered_json> find_item(const std::string& item_id) const;
  bool erase(const std::string& id);
  size_t size() const;

 private:
  struct Held {
    std::shared_ptr<const Entry> entry;
    size_t bytes = 0;
  };
  const size_t max_entries_, max_bytes_;
  mutable std::mutex mutex_;
  std::deque<Held> held_;  // oldest first
  size_t bytes_ = 0;
};

}  // namespace qvl
