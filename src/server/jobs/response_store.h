// The last responses of POST /v1/responses, kept so a request can continue
// one with `previous_response_id` (and GET /v1/responses/{id} can return
// it). Bounded twice: at most `max_entries` responses and about `max_bytes`
// of JSON text (an input image's data: URI counts in full); the oldest go
// first. The job store (job_store.h) hands one out: MemoryResponseStore
// here, or SqlResponseStore (sql_response_store.h) in its database. Safe
// from any thread.
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

  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kMaxBytes = size_t{256} << 20;

  virtual ~ResponseStore() = default;
  virtual void put(Entry entry) = 0;
  virtual std::shared_ptr<const Entry> get(const std::string& id) const = 0;
  // The item whose "id" is `item_id` in any stored conversation, newest
  // first (for input items {"type": "item_reference", "id"}).
  virtual std::optional<nlohmann::ordered_json> find_item(const std::string& item_id) const = 0;
  virtual bool erase(const std::string& id) = 0;
  virtual size_t size() const = 0;
};

// About the size of a JSON value's text, without writing it out.
size_t json_text_bytes(const nlohmann::ordered_json& j);

// In this process's memory only.
class MemoryResponseStore final : public ResponseStore {
 public:
  explicit MemoryResponseStore(size_t max_entries = kMaxEntries, size_t max_bytes = kMaxBytes);

  void put(Entry entry) override;
  std::shared_ptr<const Entry> get(const std::string& id) const override;
  std::optional<nlohmann::ordered_json> find_item(const std::string& item_id) const override;
  bool erase(const std::string& id) override;
  size_t size() const override;

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
