#include "server/jobs/sql_job_store.h"

#include <map>

#include "server/jobs/job_media.h"

namespace qvl {

using json = nlohmann::json;

namespace {

const std::string kJobColumns =
    "id, created, model, body, batch, page, state, attempts, owner, lease_until_ms, cancel_requested, "
    "progress_tokens, progress_text, result, error, finished_ms";

JobRecord job_at(const SqlRows& r, int row) {
  JobRecord j;
  j.id = r.text(row, 0);
  j.created = r.i64(row, 1);
  j.model = r.text(row, 2);
  j.body = r.text(row, 3);
  j.batch = r.text(row, 4);
  j.page = static_cast<int>(r.i64(row, 5));
  j.state = job_state_named(r.text(row, 6)).value_or(JobState::Failed);
  j.attempts = static_cast<int>(r.i64(row, 7));
  j.owner = r.text(row, 8);
  j.lease_until_ms = r.i64(row, 9);
  j.cancel_requested = r.flag(row, 10);
  j.progress_tokens = r.i64(row, 11);
  j.progress_text = r.text(row, 12);
  j.result = r.json_at(row, 13);
  j.error = r.json_at(row, 14);
  j.finished_ms = r.i64(row, 15);
  return j;
}

const std::string kEnded = "('succeeded','failed','cancelled','expired')";

// A job or batch is kept while it has not ended, or ended within the TTL (?2).
const std::string kSelectJob =
    "SELECT " + kJobColumns + " FROM {jobs} WHERE id = ?1 AND (finished_ms = 0 OR finished_ms > {now_ms} - ?2)";

const std::string kClaimJob =
    "UPDATE {jobs} SET state = 'running', owner = ?2, lease_until_ms = {now_ms} + ?3, attempts = attempts + 1, "
    "progress_tokens = 0, progress_text = '' WHERE id = ?1 RETURNING " +
    kJobColumns;

// Jobs kept, and the bytes of bodies, results, plans and media (each file once).
constexpr const char* kStoredJobsAndBytes =
    "SELECT (SELECT count(*) FROM {jobs}), (SELECT coalesce(sum(bytes), 0) FROM {jobs}) + "
    "(SELECT coalesce(sum(bytes), 0) FROM {batches}) + (SELECT coalesce(sum(bytes), 0) FROM {media})";

// Batches without jobs, and media no job or batch refers to, go.
void drop_unowned(SqlConnection& c) {
  c.exec("DELETE FROM {batches} WHERE NOT EXISTS (SELECT 1 FROM {jobs} WHERE {jobs}.batch = {batches}.id)");
  c.exec(
      "DELETE FROM {media_refs} WHERE NOT EXISTS (SELECT 1 FROM {jobs} WHERE {jobs}.id = {media_refs}.owner) "
      "AND NOT EXISTS (SELECT 1 FROM {batches} WHERE {batches}.id = {media_refs}.owner)");
  c.exec("DELETE FROM {media} WHERE NOT EXISTS (SELECT 1 FROM {media_refs} WHERE {media_refs}.hash = {media}.hash)");
}

void store_media(SqlConnection& c, const std::string& owner, const DetachedMedia& d) {
  for (const auto& [hash, data] : d.blobs)
    c.exec("INSERT INTO {media} (hash, data, bytes) VALUES (?1, ?2, ?3) ON CONFLICT (hash) DO NOTHING",
           {hash, data, static_cast<int64_t>(data.size())});
  for (const MediaRef& r : d.refs)
    c.exec("INSERT INTO {media_refs} (owner, pointer, hash) VALUES (?1, ?2, ?3)", {owner, r.pointer, r.hash});
}

// `text` (owner's body or plan as stored) with its media put back.
std::string attached(SqlConnection& c, const std::string& owner, const std::string& text) {
  const SqlRows r = c.exec(
      "SELECT r.pointer, r.hash, m.data FROM {media_refs} r JOIN {media} m ON m.hash = r.hash "
      "WHERE r.owner = ?1 ORDER BY r.{ref_seq}",
      {owner});
  std::vector<MediaRef> refs;
  std::map<std::string, std::string> blobs;
  for (int i = 0; i < r.size(); ++i) {
    refs.push_back({r.text(i, 0), r.text(i, 1)});
    blobs.try_emplace(r.text(i, 1), r.text(i, 2));
  }
  return attach_media(text, refs, blobs);
}

}  // namespace

SqlJobStore::SqlJobStore(std::shared_ptr<SqlDatabase> db, const JobStoreOptions& options)
    : options_(options), db_(std::move(db)), responses_(db_) {}

void SqlJobStore::purge(SqlConnection& c) {
  if (c.exec("DELETE FROM {jobs} WHERE state IN " + kEnded + " AND finished_ms <= {now_ms} - ?1", {ttl_ms()})
          .affected() > 0)
    drop_unowned(c);
  last_purge_ms_ = unix_ms();
}

bool SqlJobStore::make_room(SqlConnection& c, size_t jobs, int64_t bytes) {
  for (;;) {
    const SqlRows kept = c.exec(kStoredJobsAndBytes);
    if (kept.i64(0, 0) + static_cast<int64_t>(jobs) <= options_.max_jobs &&
        kept.i64(0, 1) + bytes <= options_.max_bytes)
      return true;
    const SqlRows oldest = c.exec("SELECT seq FROM {jobs} WHERE state IN " + kEnded + " ORDER BY finished_ms LIMIT 1");
    if (oldest.empty()) return false;  // full of unfinished jobs
    c.exec("DELETE FROM {jobs} WHERE seq = ?1", {oldest.i64(0, 0)});
    drop_unowned(c);
  }
}

bool SqlJobStore::add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) {
  const DetachedAdd detached = detach_add(jobs, batch);
  const int64_t bytes = detached.bytes;
  if (static_cast<int64_t>(jobs.size()) > options_.max_jobs || bytes > options_.max_bytes) return false;
  return db_->with([&](SqlConnection& c) {
    // Run again after a commit whose reply was lost: the jobs are in (ids are random, 128 bits).
    if (!jobs.empty() && !c.exec("SELECT 1 FROM {jobs} WHERE id = ?1", {jobs.front().id}).empty()) return true;
    SqlTransaction t(c);
    c.serialize(SqlLock::AddJobs);  // the bounds hold across processes
    purge(c);
    if (!make_room(c, jobs.size(), bytes)) return false;  // the transaction rolls back
    if (batch) {
      const std::string& plan = detached.plan->text;
      c.exec("INSERT INTO {batches} (id, created, model, plan, job_ids, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
             {batch->id, batch->created, batch->model, plan, json(batch->job_ids).dump(),
              static_cast<int64_t>(plan.size())});
      store_media(c, batch->id, *detached.plan);
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      const JobRecord& j = jobs[i];
      const std::string& body = detached.bodies[i].text;
      c.exec(
          "INSERT INTO {jobs} (id, created, model, body, batch, page, state, bytes) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7)",
          {j.id, j.created, j.model, body, j.batch.empty() ? SqlParam() : SqlParam(j.batch), j.page,
           static_cast<int64_t>(body.size())});
      store_media(c, j.id, detached.bodies[i]);
    }
    c.notify("added");
    t.commit();
    return true;
  });
}

std::optional<ClaimedJob> SqlJobStore::claim(const std::string& owner, int window) {
  std::optional<ClaimedJob> claimed = db_->with([&](SqlConnection& c) -> std::optional<ClaimedJob> {
    // A claim lost to a crash of the database leaves the job queued (or its
    // lease to run out): harmless, so its commit need not wait for the disk.
    SqlTransaction t(c, SqlTransaction::Commit::Relaxed);
    if (unix_ms() - last_purge_ms_ >= 1000) purge(c);
    c.exec(
        "UPDATE {jobs} SET state = 'failed', error = ?1, finished_ms = {now_ms}, owner = NULL "
        "WHERE state = 'running' AND lease_until_ms < {now_ms} AND attempts >= ?2",
        {attempts_exhausted_error(options_.max_attempts).dump(), options_.max_attempts});
    const SqlRows pick = c.exec(
        "SELECT id, state FROM {jobs} j WHERE "
        "(state = 'queued' AND (batch IS NULL OR "
        "  (SELECT count(*) FROM {jobs} r WHERE r.batch = j.batch AND r.state = 'running') < ?1)) "
        "OR (state = 'running' AND lease_until_ms < {now_ms}) ORDER BY seq LIMIT 1{skip_locked}",
        {window});
    if (pick.empty()) {
      t.commit();
      return std::nullopt;
    }
    const std::string id = pick.text(0, 0);
    ClaimedJob job{job_at(c.exec(kClaimJob, {id, owner, lease_ms()}), 0), std::nullopt, pick.text(0, 1) == "running"};
    job.job.body = attached(c, id, job.job.body);
    if (!job.job.batch.empty() && (job.batch = batch_in(c, job.job.batch)))
      job.batch->plan = attached(c, job.batch->id, job.batch->plan);
    t.commit();
    return job;
  });
  if (claimed && claimed->taken_over) ++taken_over_;
  return claimed;
}

bool SqlJobStore::heartbeat(const std::string& id, const std::string& owner, int64_t tokens, const std::string& text) {
  return db_->with([&](SqlConnection& c) {
    SqlTransaction t(c, SqlTransaction::Commit::Relaxed);  // a lost heartbeat costs nothing: the next one renews
    const bool mine = c.exec(
                           "UPDATE {jobs} SET lease_until_ms = {now_ms} + ?3, progress_tokens = ?4, progress_text = ?5 "
                           "WHERE id = ?1 AND owner = ?2 AND state = 'running' AND NOT cancel_requested",
                           {id, owner, lease_ms(), tokens, text})
                          .affected() > 0;
    t.commit();
    return mine;
  });
}

bool SqlJobStore::finish(const std::string& id, const std::string& owner, JobState state, const json& result,
                         const json& error) {
  const SqlParam result_text = json_param(result), error_text = json_param(error);
  const auto* result_string = std::get_if<std::string>(&result_text);
  const int64_t result_bytes = result_string ? static_cast<int64_t>(result_string->size()) : 0;
  return db_->with([&](SqlConnection& c) {
    SqlTransaction t(c);
    const bool mine = c.exec(
                           "UPDATE {jobs} SET state = ?3, result = ?4, error = ?5, owner = NULL, progress_text = '', "
                           "finished_ms = {now_ms}, bytes = bytes + ?6 "
                           "WHERE id = ?1 AND owner = ?2 AND state = 'running'",
                           {id, owner, std::string(job_state_name(state)), result_text, error_text, result_bytes})
                          .affected() > 0;
    if (mine) c.notify("ended");  // a batch's next page may be claimable now
    t.commit();
    return mine;
  });
}

void SqlJobStore::release(const std::string& id, const std::string& owner) {
  db_->with([&](SqlConnection& c) {
    SqlTransaction t(c);
    c.exec(
        "UPDATE {jobs} SET state = 'queued', owner = NULL, attempts = attempts - 1 "
        "WHERE id = ?1 AND owner = ?2 AND state = 'running'",
        {id, owner});
    c.notify("released");
    t.commit();
  });
}

std::optional<JobRecord> SqlJobStore::cancel(const std::string& id) {
  return db_->with([&](SqlConnection& c) {
    SqlTransaction t(c);
    c.exec("UPDATE {jobs} SET state = 'cancelled', finished_ms = {now_ms} WHERE id = ?1 AND state = 'queued'", {id});
    // Its runner, in this process or another, sees this at its next heartbeat.
    c.exec("UPDATE {jobs} SET cancel_requested = {true} WHERE id = ?1 AND state = 'running'", {id});
    c.notify("cancelled");
    std::optional<JobRecord> j = get_in(c, id);
    t.commit();
    return j;
  });
}

std::optional<JobRecord> SqlJobStore::get_in(SqlConnection& c, const std::string& id) {
  const SqlRows r = c.exec(kSelectJob, {id, ttl_ms()});
  if (r.empty()) return std::nullopt;
  return job_at(r, 0);
}

std::optional<JobRecord> SqlJobStore::get(const std::string& id) {
  return db_->with([&](SqlConnection& c) { return get_in(c, id); });
}

std::optional<BatchRecord> SqlJobStore::batch_in(SqlConnection& c, const std::string& id) {
  const SqlRows r = c.exec(
      "SELECT id, created, model, plan, job_ids FROM {batches} b WHERE id = ?1 AND EXISTS (SELECT 1 FROM {jobs} "
      "WHERE {jobs}.batch = b.id AND (finished_ms = 0 OR finished_ms > {now_ms} - ?2))",
      {id, ttl_ms()});
  if (r.empty()) return std::nullopt;
  return BatchRecord{r.text(0, 0), r.i64(0, 1), r.text(0, 2), r.text(0, 3),
                     json::parse(r.text(0, 4)).get<std::vector<std::string>>()};
}

std::optional<BatchRecord> SqlJobStore::batch(const std::string& id) {
  return db_->with([&](SqlConnection& c) { return batch_in(c, id); });
}

JobCounts SqlJobStore::counts() {
  return db_->with([&](SqlConnection& c) {
    JobCounts counts;
    for (JobState s : kJobStates) counts.jobs[s] = 0;
    const SqlRows r =
        c.exec("SELECT state, count(*) FROM {jobs} WHERE finished_ms = 0 OR finished_ms > {now_ms} - ?1 GROUP BY state",
               {ttl_ms()});
    for (int i = 0; i < r.size(); ++i)
      if (auto s = job_state_named(r.text(i, 0))) counts.jobs[*s] = r.i64(i, 1);
    counts.bytes = c.exec(kStoredJobsAndBytes).i64(0, 1);
    counts.leases_taken_over = taken_over_;
    return counts;
  });
}

}  // namespace qvl
