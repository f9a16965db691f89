// The PostgreSQL job store when its database goes away and comes back: a
// real server (postgres_server.h) stopped with a fast shutdown or a SIGKILL
// of the postmaster, then started again on the same port and data. Every
// call meanwhile throws StoreUnavailable at once (never hangs, never another
// exception), unavailable() says why without the password, and after the
// restart the store reconnects, LISTENs again and finds its jobs as they
// were. A database away when the store opens is the same outage.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "postgres_server.h"
#include "server/jobs/job_store.h"
#include "server/jobs/job_store_open.h"
#include "util/error.h"

namespace qvl::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

JobRecord queued_job() {
  JobRecord j;
  j.id = new_job_id();
  j.created = unix_ms() / 1000;
  j.model = "tiny";
  j.body = R"({"messages":[]})";
  return j;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Calls f until it stops throwing StoreUnavailable (the store's backoff is 2 s at most); its result.
template <typename F>
auto once_reachable(F&& f, std::chrono::seconds limit = 10s) {
  const auto until = Clock::now() + limit;
  for (;;) {
    try {
      return f();
    } catch (const StoreUnavailable&) {
      if (Clock::now() > until) throw;
      std::this_thread::sleep_for(50ms);
    }
  }
}

// Waits until pred() holds, up to `limit`.
template <typename P>
bool eventually(P&& pred, std::chrono::milliseconds limit = 5000ms) {
  const auto until = Clock::now() + limit;
  while (!pred()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

class PostgresOutage : public ::testing::TestWithParam<int> {  // the signal that stops the postmaster
 protected:
  void SetUp() override {
    if (!postgres_.available()) GTEST_SKIP() << "PostgreSQL: " << postgres_.why_not();
    url_ = postgres_.fresh_database();
  }
  std::unique_ptr<JobStore> open() {
    JobStoreOptions o;
    o.url = url_;
    return open_job_store(o);
  }
  PostgresServer postgres_;
  std::string url_;
};

TEST_P(PostgresOutage, EveryCallIsUnavailableAtOnceThenTheStoreComesBackWithItsJobs) {
  auto store = open();
  std::atomic<int> wakes{0};
  ASSERT_TRUE(store->watch([&] { ++wakes; }));
  ASSERT_TRUE(eventually([&] { return wakes > 0; })) << "the listener never connected";
  const JobRecord running = queued_job(), queued = queued_job();
  ASSERT_TRUE(store->add({running}, nullptr));
  ASSERT_TRUE(store->claim("replica-a", 2));
  ASSERT_TRUE(store->add({queued}, nullptr));
  store->responses().put({"resp_kept", nlohmann::ordered_json::array(), {{"id", "resp_kept"}}});
  std::this_thread::sleep_for(1s);  // the claim committed without a flush (synchronous_commit off): let it reach disk
  EXPECT_EQ(store->unavailable(), "");

  postgres_.stop(GetParam());
  // The first call meets the dropped connection, tries once more and gives up; the next ones back off.
  try {
    store->get(running.id);
    FAIL() << "read a job from a stopped database";
  } catch (const StoreUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("job store postgresql://qvl@127.0.0.1:"), std::string::npos) << e.what();
  }
  const std::string why = store->unavailable();
  EXPECT_NE(why.find("job store postgresql://qvl@127.0.0.1:"), std::string::npos) << why;
  const auto t0 = Clock::now();
  EXPECT_THROW(store->add({queued_job()}, nullptr), StoreUnavailable);
  EXPECT_THROW(store->claim("replica-a", 2), StoreUnavailable);
  EXPECT_THROW(store->heartbeat(running.id, "replica-a", 3, "abc"), StoreUnavailable);
  EXPECT_THROW(store->finish(running.id, "replica-a", JobState::Succeeded, {{"ok", true}}, nullptr), StoreUnavailable);
  EXPECT_THROW(store->release(running.id, "replica-a"), StoreUnavailable);
  EXPECT_THROW(store->cancel(queued.id), StoreUnavailable);
  EXPECT_THROW(store->batch("batch-x"), StoreUnavailable);
  EXPECT_THROW(store->counts(), StoreUnavailable);
  EXPECT_THROW(store->responses().get("resp_kept"), StoreUnavailable);
  EXPECT_THROW(store->responses().put({"resp_new", nlohmann::ordered_json::array(), {}}), StoreUnavailable);
  EXPECT_LT(seconds_since(t0), 2.0) << "calls waited on a database that is away";

  const int wakes_before = wakes;
  ASSERT_EQ(postgres_.start(), "");
  const auto back = Clock::now();
  const std::optional<JobRecord> r = once_reachable([&] { return store->get(running.id); });
  const double recovery_s = seconds_since(back);
  EXPECT_LT(recovery_s, 3.0) << "the backoff is 2 s at most";
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, JobState::Running);
  EXPECT_EQ(r->owner, "replica-a");
  EXPECT_EQ(store->unavailable(), "");
  EXPECT_TRUE(store->finish(running.id, "replica-a", JobState::Succeeded, {{"ok", true}}, nullptr));
  EXPECT_FALSE(store->finish(running.id, "replica-a", JobState::Succeeded, {{"ok", 2}}, nullptr))
      << "a job ends once";
  EXPECT_EQ(store->get(running.id)->result, nlohmann::json({{"ok", true}}));
  EXPECT_EQ(store->get(queued.id)->state, JobState::Queued);
  EXPECT_NE(store->responses().get("resp_kept"), nullptr);

  // The listener connected and LISTENs again: another handle's job wakes it.
  ASSERT_TRUE(eventually([&] { return wakes > wakes_before; })) << "no wake after the listener reconnected";
  const int settled = wakes;
  ASSERT_TRUE(open()->add({queued_job()}, nullptr));
  EXPECT_TRUE(eventually([&] { return wakes > settled; })) << "no NOTIFY after the restart: not LISTENing again";
}

INSTANTIATE_TEST_SUITE_P(FastShutdownAndKill, PostgresOutage, ::testing::Values(SIGINT, SIGKILL),
                         [](const auto& info) { return info.param == SIGINT ? "FastShutdown" : "KillNine"; });

TEST(PostgresAtStart, ADatabaseAwayAtStartIsAnOutageNotAFailure) {
  PostgresServer postgres;
  if (!postgres.available()) GTEST_SKIP() << "PostgreSQL: " << postgres.why_not();
  const std::string url = postgres.fresh_database();
  postgres.stop(SIGINT);
  JobStoreOptions o;
  // With a password: it must not reach the logs or /health.
  o.url = "postgresql://qvl:s3cret@" + url.substr(std::string("postgresql://qvl@").size());
  std::unique_ptr<JobStore> store = open_job_store(o);  // starts, degraded
  const std::string why = store->unavailable();
  EXPECT_NE(why.find("cannot connect"), std::string::npos) << why;
  EXPECT_NE(why.find("postgresql://qvl:***@127.0.0.1:"), std::string::npos) << why;
  EXPECT_EQ(why.find("s3cret"), std::string::npos) << why;
  EXPECT_THROW(store->get("job-x"), StoreUnavailable);

  ASSERT_EQ(postgres.start(), "");
  const JobRecord j = queued_job();
  EXPECT_TRUE(once_reachable([&] { return store->add({j}, nullptr); })) << "the schema was not made on connecting";
  EXPECT_EQ(store->get(j.id)->state, JobState::Queued);
  EXPECT_EQ(store->unavailable(), "");
}

TEST(PostgresAtStart, AMalformedUrlIsRefusedAtOnce) {
  JobStoreOptions o;
  o.url = "postgresql://qvl:s3cret@127.0.0.1:5432/db?nosuchoption=1";
  try {
    open_job_store(o);
    FAIL() << "opened a store with a malformed URL";
  } catch (const StoreUnavailable& e) {
    FAIL() << "a malformed URL is no outage: " << e.what();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("not a PostgreSQL connection URL"), std::string::npos) << what;
    EXPECT_NE(what.find("nosuchoption"), std::string::npos) << what;
    EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace qvl::test
