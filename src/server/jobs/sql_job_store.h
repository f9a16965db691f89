// The durable job store, written once: the lifecycle of job_store.h (add,
// claim, heartbeat, finish, release, cancel, polls, bounds, TTLs, leases,
// media once) as SQL over a SqlDatabase (sql_database.h) — SQLite
// (job_store_sqlite.h) or PostgreSQL (job_store_postgres.h), which keep only
// their connection, schema and dialect.
//
// Every change is one transaction. The store's bounds and TTLs are read in
// the database; leases and finish times come from the dialect's clock.
#pragma once

#include <atomic>
#include <memory>

#include "server/jobs/job_store.h"
#include "server/jobs/sql_database.h"
#include "server/jobs/sql_response_store.h"

namespace qvl {

class SqlJobStore final : public JobStore {
 public:
  SqlJobStore(std::shared_ptr<SqlDatabase> db, const JobStoreOptions& options);

  std::string name() const override { return db_->name(); }
  bool durable() const override { return true; }
  bool add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) override;
  std::optional<ClaimedJob> claim(const std::string& owner, int window) override;
  bool heartbeat(const std::string& id, const std::string& owner, int64_t tokens, const std::string& text) override;
  bool finish(const std::string& id, const std::string& owner, JobState state, const nlohmann::json& result,
              const nlohmann::json& error) override;
  void release(const std::string& id, const std::string& owner) override;
  std::optional<JobRecord> cancel(const std::string& id) override;
  std::optional<JobRecord> get(const std::string& id) override;
  std::optional<BatchRecord> batch(const std::string& id) override;
  JobCounts counts() override;
  ResponseStore& responses() override { return responses_; }
  bool watch(std::function<void()> changed) override { return db_->watch(std::move(changed)); }
  std::string unavailable() const override { return db_->unavailable(); }

 private:
  // Finished jobs past their TTL go (and what only they held).
  void purge(SqlConnection& c);
  // Drops finished jobs, oldest first, until `jobs` more of `bytes` fit;
  // false when they cannot.
  bool make_room(SqlConnection& c, size_t jobs, int64_t bytes);
  std::optional<JobRecord> get_in(SqlConnection& c, const std::string& id);
  std::optional<BatchRecord> batch_in(SqlConnection& c, const std::string& id);
  int64_t ttl_ms() const { return static_cast<int64_t>(options_.ttl_s * 1000); }
  int64_t lease_ms() const { return static_cast<int64_t>(options_.lease_s * 1000); }

  const JobStoreOptions options_;
  std::shared_ptr<SqlDatabase> db_;
  SqlResponseStore responses_;  // the same database's
  std::atomic<int64_t> taken_over_{0};
  std::atomic<int64_t> last_purge_ms_{0};  // this process's clock: claims purge once a second at most
};

}  // namespace qvl
