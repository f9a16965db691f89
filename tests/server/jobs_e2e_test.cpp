// Async jobs: 202 + unguessable id, queued/running/succeeded with the same
// completion a synchronous request gets, DELETE cancels, a job past the
// deadline is expired, a finished job is forgotten after the TTL.
#include <regex>

#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

json wait_status(ServerProcess& s, const std::string& id, const std::string& want, int ms = 20000) {
  json last;
  eventually([&] {
    auto r = s.client().Get(("/v1/jobs/" + id).c_str());
    if (!r || r->status != 200) return false;
    last = json::parse(r->body);
    return last["status"] == want;
  }, ms);
  return last;
}

TEST(Jobs, LifecycleSucceededCancelledUnknown) {
  ServerProcess s({"--parallel", "1"});
  auto c = s.client();
  const json body = chat_body("What is in this image?", png_data_uri(), 16);
  auto sync = post_json(c, "/v1/chat/completions", body);
  ASSERT_TRUE(sync);
  const std::string expected = json::parse(sync->body)["choices"][0]["message"]["content"];

  auto r = post_json(c, "/v1/jobs", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const json created = json::parse(r->body);
  const std::string id = created["id"];
  EXPECT_TRUE(std::regex_match(id, std::regex("job-[0-9a-f]{32}"))) << id;
  EXPECT_TRUE(created["status"] == "queued" || created["status"] == "running");
  const json done = wait_status(s, id, "succeeded");
  ASSERT_EQ(done["status"], "succeeded") << done;
  EXPECT_EQ(done["result"]["object"], "chat.completion");
  EXPECT_EQ(done["result"]["choices"][0]["message"]["content"], expected);

  // A long job: running with tokens so far, then DELETE cancels it.
  json long_body = chat_body("Describe this image at great length.", png_data_uri(), 3000);
  auto lr = post_json(c, "/v1/jobs", long_body);
  ASSERT_EQ(lr->status, 202);
  const std::string long_id = json::parse(lr->body)["id"];
  json running;
  ASSERT_TRUE(eventually([&] {
    running = json::parse(c.Get(("/v1/jobs/" + long_id).c_str())->body);
    return running["status"] == "running" && running["progress"]["tokens"].get<int>() > 0;
  }, 20000)) << running;
  auto del = c.Delete(("/v1/jobs/" + long_id).c_str());
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  EXPECT_EQ(json::parse(del->body)["status"], "cancelled");
  EXPECT_TRUE(eventually([&] { return s.metric("qvl_slots_busy") == 0; }));

  auto unknown = c.Get("/v1/jobs/job-00000000000000000000000000000000");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(c.Delete("/v1/jobs/nope")->status, 404);
  EXPECT_EQ(s.stop(), 0);
}

TEST(Jobs, DeadlineExpiresAndTtlForgets) {
  ServerProcess s({"--timeout", "0.5", "--job-ttl", "1"});
  auto c = s.client();
  auto r = post_json(c, "/v1/jobs", chat_body("Describe this image at great length.", png_data_uri(), 3000));
  ASSERT_EQ(r->status, 202);
  const std::string id = json::parse(r->body)["id"];
  const json expired = wait_status(s, id, "expired", 10000);
  EXPECT_EQ(expired["status"], "expired") << expired;
  EXPECT_EQ(expired["error"]["code"], "timeout");
  // Kept for the TTL, then gone.
  EXPECT_TRUE(eventually([&] { return c.Get(("/v1/jobs/" + id).c_str())->status == 404; }, 5000));
  EXPECT_EQ(s.stop(), 0);
}

TEST(Jobs, BadBodyIsRefusedBeforeAJobExists) {
  ServerProcess s;
  auto c = s.client();
  auto r = c.Post("/v1/jobs", "{\"messages\": 5}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(s.metric("qvl_jobs_stored"), 0);
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace qvl::test
