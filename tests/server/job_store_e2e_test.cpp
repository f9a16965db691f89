// The durable job stores. sqlite (the default): jobs queued, running and
// finished when the server is killed (-9) are all accounted for after a
// restart on the same state folder; a job whose server keeps dying fails
// after three attempts; a full store refuses with 429 and Retry-After; a
// schema from an older qvl is migrated on open. postgresql: two servers on
// one database are one service: either answers the other's jobs, a cancel
// through one stops the job the other runs, and a job whose server was
// killed is finished by the other once its lease runs out.
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>

#include "postgres_server.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

// A temporary state folder, removed with its contents when the test ends.
struct StateDir {
  std::string path;
  StateDir() {
    char tmpl[] = "/tmp/qvl-state-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~StateDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

json job(ServerProcess& s, const std::string& id) {
  auto r = s.client().Get(("/v1/jobs/" + id).c_str());
  if (!r || r->status != 200) return json();
  return json::parse(r->body);
}

std::string submit(ServerProcess& s, const json& body) {
  auto c = s.client();
  auto r = post_json(c, "/v1/jobs", body);
  if (!r || r->status != 202) throw std::runtime_error("POST /v1/jobs: " + (r ? r->body : std::string("no answer")));
  return json::parse(r->body)["id"];
}

json wait_ended(ServerProcess& s, const std::string& id, int ms = 60000) {
  json last;
  eventually(
      [&] {
        last = job(s, id);
        return last.is_object() && last["status"] != "queued" && last["status"] != "running";
      },
      ms);
  return last;
}

std::vector<std::string> serve_args(const StateDir& dir, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"--state-dir", dir.path, "--parallel", "1", "--queue-size", "1", "--job-lease", "1"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TEST(JobStore, KillNineLosesNoJob) {
  StateDir dir;
  auto s = std::make_unique<ServerProcess>(serve_args(dir));
  const std::string finished = submit(*s, chat_body("Hello", "", 8));
  const json finished_before = wait_ended(*s, finished);
  ASSERT_EQ(finished_before["status"], "succeeded") << finished_before;
  // One running (long), then more than the scheduler's queue holds.
  const std::string running = submit(*s, chat_body("Describe this image at great length.", png_data_uri(), 3000));
  ASSERT_TRUE(eventually([&] { return job(*s, running)["status"] == "running"; }, 20000));
  std::vector<std::string> queued;
  for (int i = 0; i < 4; ++i) queued.push_back(submit(*s, chat_body("Count to " + std::to_string(i), "", 8)));
  s.reset();  // SIGKILL: no drain, no goodbye

  s = std::make_unique<ServerProcess>(serve_args(dir));
  const json finished_after = job(*s, finished);
  EXPECT_EQ(finished_after["status"], "succeeded");
  EXPECT_EQ(finished_after["result"], finished_before["result"]);  // the same answer, not run again
  for (const std::string& id : queued) EXPECT_EQ(wait_ended(*s, id)["status"], "succeeded") << id;
  // The running job ran again from the start once its lease ran out.
  const json again = wait_ended(*s, running);
  EXPECT_EQ(again["status"], "succeeded") << again.dump().substr(0, 400);
  EXPECT_EQ(again["attempts"], 2) << again.dump().substr(0, 400);
  // The running job, and the next one if it was claimed into the scheduler's
  // queue before the kill.
  EXPECT_GE(s->metric("qvl_job_leases_taken_over_total"), 1);
  EXPECT_LE(s->metric("qvl_job_leases_taken_over_total"), 2);
  EXPECT_EQ(s->stop(), 0) << s->log();
}

TEST(JobStore, AJobWhoseServerDiesThreeTimesFails) {
  StateDir dir;
  auto s = std::make_unique<ServerProcess>(serve_args(dir));
  const std::string id = submit(*s, chat_body("Describe this image at great length.", png_data_uri(), 3000));
  for (int attempt = 1; attempt <= 3; ++attempt) {
    json j;
    ASSERT_TRUE(eventually(
        [&] {
          j = job(*s, id);
          return j["status"] == "running" && j.value("attempts", 1) == attempt;
        },
        20000))
        << attempt << ": " << j.dump().substr(0, 300);
    s.reset();  // SIGKILL while it runs the job
    s = std::make_unique<ServerProcess>(serve_args(dir));
  }
  const json failed = wait_ended(*s, id, 20000);
  EXPECT_EQ(failed["status"], "failed") << failed.dump().substr(0, 300);
  EXPECT_EQ(failed["error"]["code"], "job_attempts_exhausted") << failed.dump().substr(0, 300);
  EXPECT_EQ(s->stop(), 0) << s->log();
}

TEST(JobStore, AFullStoreRefusesWith429AndRetryAfter) {
  StateDir dir;
  ServerProcess s(serve_args(dir, {"--max-jobs", "2"}));
  auto c = s.client();
  const json long_job = chat_body("Describe this image at great length.", png_data_uri(), 3000);
  const std::string a = submit(s, long_job), b = submit(s, long_job);
  auto r = post_json(c, "/v1/jobs", long_job);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "too_many_jobs");
  EXPECT_TRUE(r->has_header("Retry-After"));
  // Finished jobs make room.
  ASSERT_EQ(c.Delete(("/v1/jobs/" + a).c_str())->status, 200);
  EXPECT_EQ(post_json(c, "/v1/jobs", chat_body("Hello", "", 4))->status, 202);
  ASSERT_EQ(c.Delete(("/v1/jobs/" + b).c_str())->status, 200);
  EXPECT_EQ(s.stop(), 0) << s.log();
}

// Version 1 of the sqlite schema, as the first durable qvl wrote it.
const char* kSchemaV1 = R"sql(
CREATE TABLE jobs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, created INTEGER NOT NULL,
  model TEXT NOT NULL, batch TEXT, page INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0, owner TEXT, lease_until_ms INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0, progress_tokens INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0, error TEXT,
  progress_text TEXT NOT NULL DEFAULT '', result TEXT, body TEXT NOT NULL);
CREATE INDEX jobs_by_state ON jobs (state, seq);
CREATE INDEX jobs_by_batch ON jobs (batch);
CREATE TABLE batches (id TEXT PRIMARY KEY, created INTEGER NOT NULL, model TEXT NOT NULL,
  plan TEXT NOT NULL, job_ids TEXT NOT NULL, bytes INTEGER NOT NULL);
PRAGMA user_version = 1;
)sql";

TEST(JobStore, AnOlderSchemaIsMigratedAndItsJobsRun) {
  StateDir dir;
  const std::string path = dir.path + "/old.db";
  const std::string id = "job-0123456789abcdef0123456789abcdef";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const std::string body = chat_body("Hello", "", 4).dump();
    std::string insert = "INSERT INTO jobs (id, created, model, body, state, bytes) VALUES ('" + id +
                         "', 1700000000, 'tiny', '" + body + "', 'queued', " + std::to_string(body.size()) + ");";
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, kSchemaV1, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    EXPECT_EQ(sqlite3_exec(db, insert.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_close(db);
  }
  ServerProcess s({"--jobs-db", "sqlite:" + path});
  auto c = s.client();
  EXPECT_EQ(wait_ended(s, id)["status"], "succeeded");
  // Version 2's table: responses are stored and read back.
  auto r = post_json(c, "/v1/responses", {{"model", "m"}, {"input", "Hello"}, {"max_output_tokens", 4}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string rid = json::parse(r->body)["id"];
  auto g = c.Get(("/v1/responses/" + rid).c_str());
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  EXPECT_EQ(s.stop(), 0) << s.log();
  // A file from a newer qvl is refused, not misread.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  const QvlResult newer = run_qvl({"serve", "--model", kTinyModel, "--port", "0", "--jobs-db", "sqlite:" + path});
  EXPECT_NE(newer.code, 0);
  EXPECT_NE(newer.err.find("schema version 99 is newer"), std::string::npos) << newer.err;
}

// Two replicas of `qvl serve` sharing one PostgreSQL database.
class PostgresJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!postgres_.available()) GTEST_SKIP() << "PostgreSQL: " << postgres_.why_not();
    url_ = postgres_.fresh_database();
  }
  std::vector<std::string> replica_args() const {
    return {"--jobs-db", url_, "--parallel", "1", "--queue-size", "1", "--job-lease", "1"};
  }
  PostgresServer postgres_;
  std::string url_;
};

TEST_F(PostgresJobs, EitherReplicaAnswersAJobTheOtherAccepted) {
  ServerProcess a(replica_args()), b(replica_args());
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(submit(i % 2 ? a : b, chat_body("Count to " + std::to_string(i), "", 6)));
  for (const std::string& id : ids) {
    const json from_a = wait_ended(a, id);
    EXPECT_EQ(from_a["status"], "succeeded") << from_a.dump().substr(0, 300);
    EXPECT_EQ(job(b, id)["result"], from_a["result"]) << "both replicas give the one stored answer";
  }
  // A stored response continues through the other replica.
  auto ca = a.client(), cb = b.client();
  auto r = post_json(ca, "/v1/responses", {{"model", "m"}, {"input", "Hello"}, {"max_output_tokens", 4}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string rid = json::parse(r->body)["id"];
  auto g = cb.Get(("/v1/responses/" + rid).c_str());
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200) << g->body;
  auto next = post_json(cb, "/v1/responses",
                        {{"model", "m"}, {"input", "And then?"}, {"previous_response_id", rid}, {"max_output_tokens", 4}});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200) << next->body;
  EXPECT_EQ(a.stop(), 0) << a.log();
  EXPECT_EQ(b.stop(), 0) << b.log();
}

TEST_F(PostgresJobs, ACancelThroughOneReplicaStopsTheJobTheOtherRuns) {
  ServerProcess a(replica_args());
  const std::string id = submit(a, chat_body("Describe this image at great length.", png_data_uri(), 3000));
  ASSERT_TRUE(eventually([&] { return job(a, id)["status"] == "running"; }, 20000));
  ServerProcess b(replica_args());  // started after a took the job
  EXPECT_EQ(job(b, id)["status"], "running");
  auto cb = b.client();
  auto d = cb.Delete(("/v1/jobs/" + id).c_str());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 200) << d->body;
  const json ended = wait_ended(a, id, 20000);
  EXPECT_EQ(ended["status"], "cancelled") << ended.dump().substr(0, 300);
  EXPECT_EQ(a.stop(), 0) << a.log();
  EXPECT_EQ(b.stop(), 0) << b.log();
}

TEST_F(PostgresJobs, AJobWhoseReplicaIsKilledIsFinishedByTheOther) {
  auto a = std::make_unique<ServerProcess>(replica_args());
  const std::string id = submit(*a, chat_body("Describe this image at great length.", png_data_uri(), 400));
  ASSERT_TRUE(eventually([&] { return job(*a, id)["status"] == "running"; }, 20000));
  a.reset();  // SIGKILL while it runs the job
  ServerProcess b(replica_args());
  const json ended = wait_ended(b, id, 120000);
  EXPECT_EQ(ended["status"], "succeeded") << ended.dump().substr(0, 300);
  EXPECT_EQ(ended["attempts"], 2) << ended.dump().substr(0, 300);
  EXPECT_EQ(b.metric("qvl_job_leases_taken_over_total"), 1);
  EXPECT_EQ(b.stop(), 0) << b.log();
}

}  // namespace
}  // namespace qvl::test
