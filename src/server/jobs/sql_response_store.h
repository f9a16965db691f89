// The responses kept for previous_response_id (response_store.h) in the job
// store's database (sql_database.h): the same SQL for SQLite and PostgreSQL,
// the same bounds as MemoryResponseStore, across every process that shares
// the database. Calls throw StoreUnavailable while the database cannot be
// reached.
#pragma once

#include <memory>

#include "server/jobs/response_store.h"
#include "server/jobs/sql_database.h"

namespace qvl {

class SqlResponseStore final : public ResponseStore {
 public:
  explicit SqlResponseStore(std::shared_ptr<SqlDatabase> db) : db_(std::move(db)) {}

  void put(Entry entry) override;
  std::shared_ptr<const Entry> get(const std::string& id) const override;
  std::optional<nlohmann::ordered_json> find_item(const std::string& item_id) const override;
  bool erase(const std::string& id) override;
  size_t size() const override;

 private:
  std::shared_ptr<SqlDatabase> db_;
};

}  // namespace qvl
