#include "server/jobs/response_store.h"

#include <algorithm>

namespace qvl {

using ojson = nlohmann::ordered_json;

size_t json_text_bytes(const ojson& j) {
  switch (j.type()) {
    case ojson::value_t::string: return j.get_ref<const std::string&>().size() + 2;
    case ojson::value_t::array: {
      size_t n = 2;
      for (const ojson& v : j) n += json_text_bytes(v) + 1;
      return n;
    }
    case ojson::value_t::object: {
      size_t n = 2;
      for (auto it = j.begin(); it != j.end(); ++it) n += it.key().size() + 4 + json_text_bytes(it.value());
      return n;
    }
    default: return 8;
  }
}

MemoryResponseStore::MemoryResponseStore(size_t max_entries, size_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

void MemoryResponseStore::put(Entry entry) {
  const size_t bytes = json_text_bytes(entry.items) + json_text_bytes(entry.response);
  if (bytes > max_bytes_ || max_entries_ == 0) return;  // could never be held
  auto e = std::make_shared<const Entry>(std::move(entry));
  std::lock_guard lock(mutex_);
  held_.push_back({std::move(e), bytes});
  bytes_ += bytes;
  while (held_.size() > max_entries_ || bytes_ > max_bytes_) {
    bytes_ -= held_.front().bytes;
    held_.pop_front();
  }
}

std::shared_ptr<const ResponseStore::Entry> MemoryResponseStore::get(const std::string& id) const {
  std::lock_guard lock(mutex_);
  for (auto it = held_.rbegin(); it != held_.rend(); ++it)
    if (it->entry->id == id) return it->entry;
  return nullptr;
}

std::optional<ojson> MemoryResponseStore::find_item(const std::string& item_id) const {
  std::lock_guard lock(mutex_);
  for (auto it = held_.rbegin(); it != held_.rend(); ++it)
    for (const ojson& item : it->entry->items)
      if (auto id = item.find("id");
          id != item.end() && id->is_string() && id->get_ref<const std::string&>() == item_id)
        return item;
  return std::nullopt;
}

bool MemoryResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.entry->id == id; });
  if (it == held_.end()) return false;
  bytes_ -= it->bytes;
  held_.erase(it);
  return true;
}

size_t MemoryResponseStore::size() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

}  // namespace qvl
