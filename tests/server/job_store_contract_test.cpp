// One contract, three backends: every JobStore (memory, sqlite, postgresql)
// keeps jobs, leases, attempts, cancels, bounds, TTLs, batches and stored
// responses the same way, called directly (no server). PostgreSQL runs as a
// real server started for this suite (postgres_server.h); the durable
// stores are also reopened, and two handles on one PostgreSQL database
// stand in for two replicas sharing a queue.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "postgres_server.h"
#include "server/jobs/job_store.h"
#include "server/jobs/job_store_open.h"
#include "server/jobs/job_store_postgres.h"
#include "util/error.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

JobRecord queued_job(const std::string& body = R"({"messages":[]})") {
  JobRecord j;
  j.id = new_job_id();
  j.created = unix_ms() / 1000;
  j.model = "tiny";
  j.body = body;
  return j;
}

// The queued jobs of `batch`'s pages 1..count, their ids added to it.
std::vector<JobRecord> page_jobs(BatchRecord& batch, int count) {
  std::vector<JobRecord> pages;
  for (int p = 1; p <= count; ++p) {
    JobRecord j = queued_job("");
    j.batch = batch.id;
    j.page = p;
    batch.job_ids.push_back(j.id);
    pages.push_back(j);
  }
  return pages;
}

class JobStoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  // Started by the first PostgreSQL case only (ctest runs one case a process).
  static void TearDownTestSuite() { postgres_.reset(); }

  void SetUp() override {
    if (GetParam() == "postgresql") {
      if (!postgres_) postgres_ = std::make_unique<PostgresServer>();
      if (!postgres_->available()) GTEST_SKIP() << "PostgreSQL: " << postgres_->why_not();
    }
    char tmpl[] = "/tmp/qvl-store-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    if (GetParam() == "memory") url_ = "memory";
    else if (GetParam() == "sqlite") url_ = "sqlite:" + dir_ + "/jobs.db";
    else url_ = postgres_->fresh_database();
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<JobStore> open(JobStoreOptions o = {}) {
    o.url = url_;
    return open_job_store(o);
  }
  bool durable() const { return GetParam() != "memory"; }

  static std::unique_ptr<PostgresServer> postgres_;
  std::string dir_, url_;
};

std::unique_ptr<PostgresServer> JobStoreContract::postgres_;

TEST_P(JobStoreContract, AJobRunsOnceFromQueuedToSucceeded) {
  auto store = open();
  const JobRecord j = queued_job();
  ASSERT_TRUE(store->add({j}, nullptr));
  EXPECT_EQ(store->get(j.id)->state, JobState::Queued);

  auto c = store->claim("runner-a", 2);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->job.id, j.id);
  EXPECT_EQ(c->job.body, j.body);
  EXPECT_EQ(c->job.state, JobState::Running);
  EXPECT_EQ(c->job.attempts, 1);
  EXPECT_EQ(c->job.owner, "runner-a");
  EXPECT_FALSE(c->taken_over);
  EXPECT_FALSE(store->claim("runner-b", 2)) << "one job, claimed once";

  EXPECT_TRUE(store->heartbeat(j.id, "runner-a", 7, "so far"));
  EXPECT_EQ(store->get(j.id)->progress_tokens, 7);
  EXPECT_EQ(store->get(j.id)->progress_text, "so far");
  EXPECT_FALSE(store->heartbeat(j.id, "runner-b", 1, "")) << "not runner-b's job";

  const json result = {{"object", "chat.completion"}, {"choices", json::array({{{"index", 0}}})}};
  EXPECT_FALSE(store->finish(j.id, "runner-b", JobState::Succeeded, result, nullptr));
  EXPECT_TRUE(store->finish(j.id, "runner-a", JobState::Succeeded, result, nullptr));
  const auto done = store->get(j.id);
  EXPECT_EQ(done->state, JobState::Succeeded);
  EXPECT_EQ(done->result, result);
  EXPECT_GT(done->finished_ms, 0);
  EXPECT_FALSE(store->claim("runner-a", 2));
  const JobCounts n = store->counts();
  EXPECT_EQ(n.jobs.at(JobState::Succeeded), 1);
  EXPECT_EQ(n.jobs.at(JobState::Queued), 0);
  EXPECT_GE(n.bytes, static_cast<int64_t>(j.body.size() + result.dump().size()));
}

TEST_P(JobStoreContract, ClaimsGoInArrivalOrder) {
  auto store = open();
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    JobRecord j = queued_job();
    ids.push_back(j.id);
    ASSERT_TRUE(store->add({j}, nullptr));
  }
  for (const std::string& id : ids) EXPECT_EQ(store->claim("r", 2)->job.id, id);
}

TEST_P(JobStoreContract, ALeaseThatRunsOutIsTakenOverAndCounted) {
  JobStoreOptions o;
  o.lease_s = 0.2;
  auto store = open(o);
  const JobRecord j = queued_job();
  ASSERT_TRUE(store->add({j}, nullptr));
  ASSERT_TRUE(store->claim("dead", 2));
  EXPECT_FALSE(store->claim("alive", 2)) << "the lease still holds";
  std::this_thread::sleep_for(350ms);
  auto c = store->claim("alive", 2);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->taken_over);
  EXPECT_EQ(c->job.attempts, 2);
  EXPECT_EQ(c->job.owner, "alive");
  EXPECT_FALSE(store->heartbeat(j.id, "dead", 1, "")) << "the dead runner lost it";
  EXPECT_FALSE(store->finish(j.id, "dead", JobState::Succeeded, json::object(), nullptr));
  EXPECT_EQ(store->counts().leases_taken_over, 1);
  EXPECT_TRUE(store->finish(j.id, "alive", JobState::Succeeded, json::object(), nullptr));
}

TEST_P(JobStoreContract, AJobWhoseRunnersKeepDyingFailsAfterMaxAttempts) {
  JobStoreOptions o;
  o.lease_s = 0.1;
  o.max_attempts = 2;
  auto store = open(o);
  const JobRecord j = queued_job();
  ASSERT_TRUE(store->add({j}, nullptr));
  ASSERT_TRUE(store->claim("r1", 2));
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(store->claim("r2", 2));
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(store->claim("r3", 2));
  const auto failed = store->get(j.id);
  EXPECT_EQ(failed->state, JobState::Failed);
  EXPECT_EQ(failed->error, attempts_exhausted_error(2));
  EXPECT_NE(failed->error.dump().find("2"), std::string::npos) << failed->error;
}

TEST_P(JobStoreContract, ReleaseHandsAJobBackWithoutCountingTheAttempt) {
  auto store = open();
  const JobRecord j = queued_job();
  ASSERT_TRUE(store->add({j}, nullptr));
  ASSERT_TRUE(store->claim("stopping", 2));
  store->release(j.id, "stopping");
  EXPECT_EQ(store->get(j.id)->state, JobState::Queued);
  EXPECT_EQ(store->get(j.id)->attempts, 0);
  EXPECT_EQ(store->claim("next", 2)->job.attempts, 1);
}

TEST_P(JobStoreContract, CancelEndsAQueuedJobAndAsksARunningOneToStop) {
  auto store = open();
  const JobRecord queued = queued_job(), running = queued_job();
  ASSERT_TRUE(store->add({running}, nullptr));
  ASSERT_TRUE(store->add({queued}, nullptr));
  ASSERT_EQ(store->claim("r", 2)->job.id, running.id);

  EXPECT_EQ(store->cancel(queued.id)->state, JobState::Cancelled);
  const auto asked = store->cancel(running.id);
  EXPECT_EQ(asked->state, JobState::Running);
  EXPECT_TRUE(asked->cancel_requested);
  EXPECT_FALSE(store->heartbeat(running.id, "r", 1, "")) << "the heartbeat tells the runner to stop";
  EXPECT_TRUE(store->finish(running.id, "r", JobState::Cancelled, nullptr, nullptr));
  EXPECT_EQ(store->get(running.id)->state, JobState::Cancelled);
  EXPECT_FALSE(store->cancel("job-00000000000000000000000000000000"));
  EXPECT_FALSE(store->claim("r", 2));
}

TEST_P(JobStoreContract, AFullStoreDropsFinishedJobsFirstAndThenRefuses) {
  JobStoreOptions o;
  o.max_jobs = 2;
  auto store = open(o);
  const JobRecord a = queued_job(), b = queued_job(), c = queued_job();
  ASSERT_TRUE(store->add({a}, nullptr));
  ASSERT_TRUE(store->add({b}, nullptr));
  EXPECT_FALSE(store->add({c}, nullptr)) << "two unfinished jobs fill it";
  ASSERT_TRUE(store->claim("r", 2));
  ASSERT_TRUE(store->finish(a.id, "r", JobState::Succeeded, json::object(), nullptr));
  EXPECT_TRUE(store->add({c}, nullptr)) << "the finished job makes room";
  EXPECT_FALSE(store->get(a.id));
  EXPECT_TRUE(store->get(b.id));

  JobStoreOptions small;
  small.max_bytes = 100;
  auto tight = open(small);
  EXPECT_FALSE(tight->add({queued_job(json{{"text", std::string(200, 'x')}}.dump())}, nullptr))
      << "bytes are bounded too";
}

TEST_P(JobStoreContract, AFinishedJobIsForgottenAfterItsTtl) {
  JobStoreOptions o;
  o.ttl_s = 0.2;
  auto store = open(o);
  const JobRecord j = queued_job();
  ASSERT_TRUE(store->add({j}, nullptr));
  ASSERT_TRUE(store->claim("r", 2));
  ASSERT_TRUE(store->finish(j.id, "r", JobState::Succeeded, json::object(), nullptr));
  EXPECT_TRUE(store->get(j.id));
  std::this_thread::sleep_for(350ms);
  EXPECT_FALSE(store->get(j.id));
  EXPECT_EQ(store->counts().jobs.at(JobState::Succeeded), 0);
}

TEST_P(JobStoreContract, ABatchHasAtMostWindowPagesRunning) {
  auto store = open();
  BatchRecord batch{"batch-" + std::string(32, 'a'), unix_ms() / 1000, "tiny", R"({"plan":true})", {}};
  const std::vector<JobRecord> pages = page_jobs(batch, 3);
  ASSERT_TRUE(store->add(pages, &batch));
  const JobRecord other = queued_job();
  ASSERT_TRUE(store->add({other}, nullptr));

  auto first = store->claim("r", 2);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->job.page, 1);
  ASSERT_TRUE(first->batch);
  EXPECT_EQ(first->batch->plan, batch.plan);
  EXPECT_EQ(first->batch->job_ids, batch.job_ids);
  EXPECT_EQ(store->claim("r", 2)->job.page, 2);
  EXPECT_EQ(store->claim("r", 2)->job.id, other.id) << "page 3 waits: two pages run";
  EXPECT_FALSE(store->claim("r", 2));
  ASSERT_TRUE(store->finish(pages[0].id, "r", JobState::Succeeded, json::object(), nullptr));
  EXPECT_EQ(store->claim("r", 2)->job.page, 3);
  EXPECT_EQ(store->batch(batch.id)->job_ids, batch.job_ids);
}

TEST_P(JobStoreContract, StoredResponsesAreFoundByIdAndByItem) {
  auto store = open();
  ResponseStore& r = store->responses();
  ResponseStore::Entry e;
  e.id = "resp_1";
  e.items = nlohmann::ordered_json::array({{{"id", "msg_1"}, {"type", "message"}, {"role", "user"}}});
  e.response = {{"id", "resp_1"}, {"object", "response"}};
  r.put(e);
  EXPECT_EQ(r.size(), 1u);
  ASSERT_TRUE(r.get("resp_1"));
  EXPECT_EQ(r.get("resp_1")->response, e.response);
  EXPECT_EQ(r.get("resp_1")->items, e.items);
  EXPECT_EQ((*r.find_item("msg_1"))["role"], "user");
  EXPECT_FALSE(r.find_item("msg_2"));
  EXPECT_TRUE(r.erase("resp_1"));
  EXPECT_FALSE(r.erase("resp_1"));
  EXPECT_FALSE(r.get("resp_1"));
  EXPECT_FALSE(r.find_item("msg_1"));
}

TEST_P(JobStoreContract, ADurableStoreKeepsEverythingAcrossAReopen) {
  if (!durable()) GTEST_SKIP() << "the memory store is gone with its process by design";
  const JobRecord done = queued_job(), queued = queued_job();
  const json result = {{"answer", 42}};
  {
    auto store = open();
    ASSERT_TRUE(store->add({done}, nullptr));
    ASSERT_TRUE(store->add({queued}, nullptr));
    ASSERT_TRUE(store->claim("r", 2));
    ASSERT_TRUE(store->finish(done.id, "r", JobState::Succeeded, result, nullptr));
    ResponseStore::Entry e;
    e.id = "resp_kept";
    e.response = {{"id", "resp_kept"}};
    store->responses().put(e);
  }
  auto store = open();
  EXPECT_EQ(store->get(done.id)->result, result);
  EXPECT_EQ(store->get(queued.id)->state, JobState::Queued);
  EXPECT_EQ(store->claim("r2", 2)->job.id, queued.id);
  ASSERT_TRUE(store->responses().get("resp_kept"));
}

// A chat body with `image` as its one image_url.
std::string body_with_image(const std::string& image, const std::string& text) {
  return json{
      {"messages",
       {{{"role", "user"},
         {"content", {{{"type", "image_url"}, {"image_url", {{"url", image}}}}, {{"type", "text"}, {"text", text}}}}}}}}
      .dump();
}

TEST_P(JobStoreContract, MediaAreStoredOnceAndGivenBackWholeToTheRunner) {
  if (!durable()) GTEST_SKIP() << "media once is the durable stores' (the memory store holds bodies as sent)";
  JobStoreOptions o;
  o.ttl_s = 0.2;
  auto store = open(o);
  const std::string image = "data:image/png;base64," + std::string(20000, 'A');
  const JobRecord a = queued_job(body_with_image(image, "first")), b = queued_job(body_with_image(image, "second"));
  ASSERT_TRUE(store->add({a}, nullptr));
  ASSERT_TRUE(store->add({b}, nullptr));
  const int64_t bytes = store->counts().bytes;
  EXPECT_GE(bytes, static_cast<int64_t>(image.size()));
  EXPECT_LT(bytes, static_cast<int64_t>(image.size() + 2000)) << "the image is kept once for both jobs";
  EXPECT_EQ(store->get(a.id)->body.find(std::string(100, 'A')), std::string::npos) << "a poll reads no media";

  for (const JobRecord* j : {&a, &b}) {
    auto c = store->claim("r", 2);
    ASSERT_TRUE(c);
    EXPECT_EQ(json::parse(c->job.body), json::parse(j->body)) << "the runner gets the body as sent";
    ASSERT_TRUE(store->finish(j->id, "r", JobState::Succeeded, json::object(), nullptr));
  }
  std::this_thread::sleep_for(350ms);
  ASSERT_TRUE(store->add({queued_job()}, nullptr));  // purges the forgotten jobs, and their media with them
  EXPECT_LT(store->counts().bytes, 1000);
}

TEST_P(JobStoreContract, ABatchPlansPdfIsGivenBackWithEachPage) {
  if (!durable()) GTEST_SKIP() << "media once is the durable stores'";
  auto store = open();
  const std::string pdf = "data:application/pdf;base64," + std::string(5000, 'B');
  const std::string plan = json{{"body", json::parse(body_with_image(pdf, "pages"))}, {"pages", {1, 2}}}.dump();
  BatchRecord batch{"batch-" + std::string(32, 'b'), unix_ms() / 1000, "tiny", plan, {}};
  const std::vector<JobRecord> pages = page_jobs(batch, 2);
  ASSERT_TRUE(store->add(pages, &batch));
  EXPECT_LT(store->counts().bytes, static_cast<int64_t>(pdf.size() + 1000));
  for (int p = 1; p <= 2; ++p) {
    auto c = store->claim("r", 2);
    ASSERT_TRUE(c && c->batch);
    EXPECT_EQ(c->job.body, "");
    EXPECT_EQ(json::parse(c->batch->plan), json::parse(plan));
  }
  EXPECT_EQ(store->batch(batch.id)->job_ids, batch.job_ids);
}

INSTANTIATE_TEST_SUITE_P(Backends, JobStoreContract, ::testing::Values("memory", "sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

// PostgreSQL only: replicas sharing one database.
class PostgresReplicas : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { postgres_ = std::make_unique<PostgresServer>(); }
  static void TearDownTestSuite() { postgres_.reset(); }
  void SetUp() override {
    if (!postgres_->available()) GTEST_SKIP() << "PostgreSQL: " << postgres_->why_not();
    url_ = postgres_->fresh_database();
  }
  std::unique_ptr<JobStore> open(JobStoreOptions o = {}) {
    o.url = url_;
    return open_job_store(o);
  }
  static std::unique_ptr<PostgresServer> postgres_;
  std::string url_;
};

std::unique_ptr<PostgresServer> PostgresReplicas::postgres_;

TEST_F(PostgresReplicas, TwoReplicasClaimingAtOnceNeverTakeTheSameJob) {
  auto a = open(), b = open();
  constexpr int kJobs = 40;
  for (int i = 0; i < kJobs; ++i) ASSERT_TRUE((i % 2 ? a : b)->add({queued_job()}, nullptr));
  std::mutex m;
  std::multiset<std::string> claimed;
  auto drain = [&](JobStore& s, const std::string& owner) {
    while (auto c = s.claim(owner, 2)) {
      std::lock_guard lock(m);
      claimed.insert(c->job.id);
    }
  };
  std::thread ta([&] { drain(*a, "replica-a"); }), tb([&] { drain(*b, "replica-b"); });
  ta.join();
  tb.join();
  EXPECT_EQ(claimed.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(std::set<std::string>(claimed.begin(), claimed.end()).size(), static_cast<size_t>(kJobs))
      << "a job was claimed twice";
}

TEST_F(PostgresReplicas, AnyReplicaAnswersAPollAndACancel) {
  auto a = open(), b = open();
  const JobRecord j = queued_job();
  ASSERT_TRUE(a->add({j}, nullptr));
  EXPECT_EQ(b->get(j.id)->state, JobState::Queued);
  ASSERT_TRUE(a->claim("replica-a", 2));
  EXPECT_TRUE(b->cancel(j.id)->cancel_requested);
  EXPECT_FALSE(a->heartbeat(j.id, "replica-a", 1, "")) << "replica a learns of the cancel";
}

TEST_F(PostgresReplicas, AnIdleReplicaIsWokenByAnotherReplicasJob) {
  auto a = open(), b = open();
  std::atomic<int> wakes{0};
  ASSERT_TRUE(b->watch([&] { ++wakes; }));
  // The listener wakes once when it connects; wait for that, then count.
  ASSERT_TRUE([&] {
    for (int i = 0; i < 100 && wakes == 0; ++i) std::this_thread::sleep_for(20ms);
    return wakes > 0;
  }());
  const int before = wakes;
  ASSERT_TRUE(a->add({queued_job()}, nullptr));
  bool woken = false;
  for (int i = 0; i < 250 && !woken; ++i) {
    woken = wakes > before;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(woken) << "no NOTIFY reached the idle replica within 5 s";
}

TEST_F(PostgresReplicas, ASchemaFromANewerQvlIsRefused) {
  open();  // creates the schema
  PostgresServer::sql(url_, "UPDATE qvl_schema SET version = 99");
  try {
    open();
    FAIL() << "opened a newer schema";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99 is newer"), std::string::npos) << e.what();
  }
}

// An unreachable server is an outage (job_store_outage_test.cpp): the store
// opens, and every call says why in one line.
TEST_F(PostgresReplicas, AnUnreachableServerIsOneClearLineWithoutThePassword) {
  JobStoreOptions o;
  o.url = "postgresql://qvl:s3cret@127.0.0.1:1/none?connect_timeout=2";
  std::unique_ptr<JobStore> store = open_job_store(o);
  try {
    store->get("job-x");
    FAIL() << "read from nothing";
  } catch (const StoreUnavailable& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot connect"), std::string::npos) << what;
    EXPECT_NE(what.find("postgresql://qvl:***@127.0.0.1:1/none"), std::string::npos) << what;
    EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
    EXPECT_EQ(what.find("Is the server running"), std::string::npos) << "one line, without libpq's hint: " << what;
  }
  EXPECT_EQ(redact_postgres_url("postgres://u:p@h/db?password=x&sslmode=disable"),
            "postgres://u:***@h/db?password=***&sslmode=disable");
  EXPECT_EQ(redact_postgres_url("postgresql://h/db"), "postgresql://h/db");
}

}  // namespace
}  // namespace qvl::test
