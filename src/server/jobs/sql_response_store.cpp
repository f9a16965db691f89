#include "server/jobs/sql_response_store.h"

namespace qvl {

using ojson = nlohmann::ordered_json;

void SqlResponseStore::put(Entry entry) {
  const std::string items = entry.items.dump(), response = entry.response.dump();
  const auto bytes = static_cast<int64_t>(items.size() + response.size());
  if (bytes > static_cast<int64_t>(kMaxBytes)) return;  // could never be held
  db_->with([&](SqlConnection& c) {
    SqlTransaction t(c);
    c.serialize(SqlLock::PutResponse);  // the bounds hold across processes
    c.exec("DELETE FROM {response_items} WHERE response_seq IN (SELECT seq FROM {responses} WHERE id = ?1)",
           {entry.id});
    c.exec("DELETE FROM {responses} WHERE id = ?1", {entry.id});
    const int64_t seq =
        c.exec("INSERT INTO {responses} (id, items, response, bytes) VALUES (?1, ?2, ?3, ?4) RETURNING seq",
               {entry.id, items, response, bytes})
            .i64(0, 0);
    for (const ojson& item : entry.items)
      if (auto id = item.find("id"); id != item.end() && id->is_string())
        c.exec("INSERT INTO {response_items} (item_id, response_seq) VALUES (?1, ?2)", {id->get<std::string>(), seq});
    // The oldest go first, past either bound.
    for (;;) {
      const SqlRows held = c.exec("SELECT count(*), coalesce(sum(bytes), 0), min(seq) FROM {responses}");
      if (held.i64(0, 0) <= static_cast<int64_t>(kMaxEntries) && held.i64(0, 1) <= static_cast<int64_t>(kMaxBytes))
        break;
      c.exec("DELETE FROM {response_items} WHERE response_seq = ?1", {held.i64(0, 2)});
      c.exec("DELETE FROM {responses} WHERE seq = ?1", {held.i64(0, 2)});
    }
    t.commit();
  });
}

std::shared_ptr<const ResponseStore::Entry> SqlResponseStore::get(const std::string& id) const {
  return db_->with([&](SqlConnection& c) -> std::shared_ptr<const Entry> {
    const SqlRows r = c.exec("SELECT items, response FROM {responses} WHERE id = ?1", {id});
    if (r.empty()) return nullptr;
    auto e = std::make_shared<Entry>();
    e->id = id;
    e->items = ojson::parse(r.text(0, 0));
    e->response = ojson::parse(r.text(0, 1));
    return e;
  });
}

std::optional<ojson> SqlResponseStore::find_item(const std::string& item_id) const {
  return db_->with([&](SqlConnection& c) -> std::optional<ojson> {
    const SqlRows r = c.exec(
        "SELECT r.items FROM {response_items} i JOIN {responses} r ON r.seq = i.response_seq "
        "WHERE i.item_id = ?1 ORDER BY r.seq DESC LIMIT 1",
        {item_id});
    if (r.empty()) return std::nullopt;
    for (const ojson& item : ojson::parse(r.text(0, 0)))
      if (auto id = item.find("id"); id != item.end() && id->is_string() && *id == item_id) return item;
    return std::nullopt;
  });
}

bool SqlResponseStore::erase(const std::string& id) {
  return db_->with([&](SqlConnection& c) {
    SqlTransaction t(c);
    c.exec("DELETE FROM {response_items} WHERE response_seq IN (SELECT seq FROM {responses} WHERE id = ?1)", {id});
    const bool erased = c.exec("DELETE FROM {responses} WHERE id = ?1", {id}).affected() > 0;
    t.commit();
    return erased;
  });
}

size_t SqlResponseStore::size() const {
  return db_->with(
      [&](SqlConnection& c) { return static_cast<size_t>(c.exec("SELECT count(*) FROM {responses}").i64(0, 0)); });
}

}  // namespace qvl
