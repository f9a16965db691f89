// Per-page jobs (POST /v1/jobs with "per_page": true) against the real
// server: a batch answers 202 with a job per page, runs each page as the
// same body with that single page (so each costs what a one-page chat
// request costs), reports results in page order, cancels, runs to the end
// when it has more pages than the queue has places while other clients are
// served in between, counts against --max-jobs, refuses what it cannot run
// naming the field, and ends cleanly when the server shuts down.
#include "../pdf/pdf_writer.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

std::string pdf_uri(const std::string& pdf) { return "data:application/pdf;base64," + base64(pdf); }

// Four pages of different sizes, so each page's cost is its own.
std::string four_page_pdf() {
  return pdf_of_pages({box_page(320, 240), box_page(240, 400), box_page(400, 300), box_page(300, 300)});
}

json file_part(const std::string& pdf, const std::string& pages = "") {
  json file = {{"file_data", pdf_uri(pdf)}, {"filename", "doc.pdf"}, {"dpi", 72}};
  if (!pages.empty()) file["pages"] = pages;
  return {{"type", "file"}, {"file", file}};
}

json body_with(const json& part, int max_tokens = 1) {
  return {{"messages",
           json::array({{{"role", "user"},
                         {"content", json::array({part, {{"type", "text"}, {"text", "Read the page."}}})}}})},
          {"max_tokens", max_tokens},
          {"temperature", 0}};
}

json batch_body(const json& part, int max_tokens = 1) {
  json b = body_with(part, max_tokens);
  b["per_page"] = true;
  return b;
}

json get(httplib::Client& c, const std::string& path) {
  auto r = c.Get(path.c_str());
  if (!r || r->status != 200) return json();
  return json::parse(r->body);
}

bool ended(const json& status) {
  return status.is_object() && status["status"] != "queued" && status["status"] != "running";
}

// Tasks queued plus running, read from one /metrics answer.
int tasks_held(const ServerProcess& s) {
  auto r = s.client().Get("/metrics");
  if (!r) return -1;
  std::istringstream in(r->body);
  std::string line;
  int held = 0;
  while (std::getline(in, line))
    if (line.rfind("qvl_queue_depth ", 0) == 0 || line.rfind("qvl_slots_busy ", 0) == 0)
      held += std::stoi(line.substr(line.find(' ') + 1));
  return held;
}

// Polls the batch until every page has ended.
json wait_batch(httplib::Client& c, const std::string& id, int ms = 60000) {
  json status;
  eventually(
      [&] {
        status = get(c, "/v1/jobs/" + id);
        return ended(status);
      },
      ms);
  return status;
}

TEST(PageBatch, PagesRunAsSinglePageJobsWithResultsInOrder) {
  ServerProcess s;
  auto c = s.client();
  const std::string pdf = four_page_pdf();
  auto r = post_json(c, "/v1/jobs", batch_body(file_part(pdf, "2-4")));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const json accepted = json::parse(r->body);
  EXPECT_EQ(accepted["object"], "qvl.job_batch");
  EXPECT_EQ(accepted["status"], "queued");
  EXPECT_EQ(accepted["pages"], json::array({2, 3, 4}));
  ASSERT_EQ(accepted["jobs"].size(), 3u);
  const std::string id = accepted["id"];
  EXPECT_EQ(id.rfind("batch-", 0), 0u);
  EXPECT_EQ(r->get_header_value("Location"), "/v1/jobs/" + id);

  const json done = wait_batch(c, id);
  ASSERT_EQ(done["status"], "succeeded") << done.dump().substr(0, 600);
  EXPECT_EQ(done["progress"], json({{"done", 3}, {"total", 3}}));
  ASSERT_EQ(done["results"].size(), 3u);
  std::set<int64_t> costs;
  for (int i = 0; i < 3; ++i) {
    const int page = i + 2;
    SCOPED_TRACE(page);
    const json& result = done["results"][i];
    EXPECT_EQ(result["page"], page);
    EXPECT_EQ(result["id"], accepted["jobs"][i]["id"]);
    EXPECT_EQ(result["status"], "succeeded");
    EXPECT_EQ(result["result"]["object"], "chat.completion");
    // A page's job costs what a chat request with that page alone costs.
    auto single = post_json(c, "/v1/chat/completions", body_with(file_part(pdf, std::to_string(page))));
    ASSERT_TRUE(single);
    ASSERT_EQ(single->status, 200) << single->body;
    const int64_t tokens = result["result"]["usage"]["prompt_tokens"];
    EXPECT_EQ(tokens, json::parse(single->body)["usage"]["prompt_tokens"].get<int64_t>());
    costs.insert(tokens);
    // Each page's job is a job of its own.
    const json job = get(c, "/v1/jobs/" + result["id"].get<std::string>());
    EXPECT_EQ(job["status"], "succeeded");
    EXPECT_EQ(job["batch"], id);
    EXPECT_EQ(job["page"], page);
  }
  EXPECT_EQ(costs.size(), 3u);

  // A PDF data: URL in image_url splits the same way (every page, 144 dpi).
  json url_body = body_with({{"type", "image_url"}, {"image_url", {{"url", pdf_uri(pdf)}}}});
  url_body["per_page"] = true;
  r = post_json(c, "/v1/jobs", url_body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const json all = wait_batch(c, json::parse(r->body)["id"]);
  EXPECT_EQ(all["status"], "succeeded");
  EXPECT_EQ(all["results"].size(), 4u);
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(PageBatch, ABatchLongerThanTheQueueRunsToItsEndWhileOthersAreServed) {
  // One slot and two queue places: a batch of 12 pages holds at most two
  // (the slot's page and the next one waiting).
  ServerProcess s({"--parallel", "1", "--queue-size", "2", "--max-pdf-pages", "40"});
  auto c = s.client();
  const std::string pdf = pdf_of_pages(std::vector<PdfPageSpec>(12, box_page(320, 240)));
  auto r = post_json(c, "/v1/jobs", batch_body(file_part(pdf), 24));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = json::parse(r->body)["id"];
  // Meanwhile another client's chat request is answered, before the batch ends.
  auto other = post_json(c, "/v1/chat/completions", chat_body("Hello", "", 4));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200) << other->body;
  const json during = get(c, "/v1/jobs/" + id);
  EXPECT_FALSE(ended(during)) << "the batch ended before another client got an answer";
  // From here on the batch is alone: what it holds is what the scheduler holds.
  int most_held = 0;
  json status;
  eventually(
      [&] {
        most_held = std::max(most_held, tasks_held(s));
        status = get(c, "/v1/jobs/" + id);
        return ended(status);
      },
      90000);
  EXPECT_EQ(status["status"], "succeeded") << status.dump().substr(0, 600);
  EXPECT_EQ(status["progress"]["done"], 12);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(status["results"][i]["page"], i + 1);
  EXPECT_LE(most_held, 2);  // one page running and the next waiting, never the whole queue
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(PageBatch, SeveralBatchesAtOnceAllRunToTheirEnd) {
  // Batches accepted while the feeder is preparing another's page (the
  // feeder's list of batches grows under it).
  ServerProcess s;
  auto c = s.client();
  const std::string pdf = pdf_of_pages(std::vector<PdfPageSpec>(3, box_page(320, 240)));
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    auto r = post_json(c, "/v1/jobs", batch_body(file_part(pdf), 8));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    ids.push_back(json::parse(r->body)["id"]);
  }
  for (const std::string& id : ids) {
    const json status = wait_batch(c, id);
    EXPECT_EQ(status["status"], "succeeded") << status.dump().substr(0, 400);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(status["results"][i]["page"], i + 1);
  }
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(PageBatch, DeleteCancelsEveryPageNotFinished) {
  ServerProcess s;
  auto c = s.client();
  const std::string pdf = pdf_of_pages(std::vector<PdfPageSpec>(5, box_page(320, 240)));
  auto r = post_json(c, "/v1/jobs", batch_body(file_part(pdf), 3000));  // seconds per page
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const json accepted = json::parse(r->body);
  const std::string id = accepted["id"];
  ASSERT_TRUE(eventually([&] { return get(c, "/v1/jobs/" + id)["status"] == "running"; }, 20000));
  // The last page's job, not yet queued, is cancelled on its own first.
  const std::string last = accepted["jobs"][4]["id"];
  EXPECT_EQ(get(c, "/v1/jobs/" + last)["status"], "queued");
  auto del_page = c.Delete(("/v1/jobs/" + last).c_str());
  ASSERT_TRUE(del_page);
  ASSERT_EQ(del_page->status, 200);
  EXPECT_EQ(json::parse(del_page->body)["status"], "cancelled");
  EXPECT_EQ(json::parse(del_page->body)["page"], 5);
  EXPECT_EQ(get(c, "/v1/jobs/" + id)["results"][4]["status"], "cancelled");
  auto del = c.Delete(("/v1/jobs/" + id).c_str());
  ASSERT_TRUE(del);
  ASSERT_EQ(del->status, 200);
  // The answer already has every page ended: a client that shows it is right.
  const json deleted = json::parse(del->body);  // named: a range-for over a temporary's member dangles
  for (const json& page : deleted["results"])
    EXPECT_TRUE(page["status"] == "cancelled" || page["status"] == "succeeded") << page.dump().substr(0, 300);
  const json status = wait_batch(c, id, 10000);
  EXPECT_EQ(status["status"], "cancelled") << status.dump().substr(0, 600);
  for (const json& page : status["results"]) EXPECT_EQ(page["status"], "cancelled") << page.dump().substr(0, 300);
  EXPECT_TRUE(eventually([&] { return s.metric("qvl_slots_busy") == 0 && s.metric("qvl_queue_depth") == 0; }));
  // The server answers as before.
  auto after = post_json(c, "/v1/chat/completions", chat_body("Hello", "", 2));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(s.stop(), 0) << s.log();
}

// A running page's answer so far is in the batch's status (what the web page
// shows as it comes), and it grows: a later poll's text starts with an
// earlier one's. The page runs to max_tokens (ignore_eos, no loop guard).
TEST(PageBatch, ARunningPageShowsItsTextSoFar) {
  // One sequence at a time, so the second page is still waiting while the first runs.
  ServerProcess s({"--parallel", "1"});
  auto c = s.client();
  const std::string pdf = pdf_of_pages(std::vector<PdfPageSpec>(2, box_page(320, 240)));
  json body = batch_body(file_part(pdf), 3000);
  body["ignore_eos"] = true;
  body["repetition_guard"] = 0;
  auto r = post_json(c, "/v1/jobs", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = json::parse(r->body)["id"];
  json first, later;
  ASSERT_TRUE(eventually(
      [&] {
        const json page = get(c, "/v1/jobs/" + id)["results"][0];
        if (page["status"] != "running" || !page.contains("progress") || page["progress"]["tokens"] < 4) return false;
        first = page["progress"];
        return true;
      },
      20000));
  ASSERT_TRUE(eventually(
      [&] {
        const json page = get(c, "/v1/jobs/" + id)["results"][0];
        if (page["status"] != "running") return false;
        later = page["progress"];
        return later["tokens"] > first["tokens"];
      },
      20000));
  const std::string a = first["text"], b = later["text"];
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(b.substr(0, a.size()), a);
  EXPECT_GT(b.size(), a.size());
  // The page not started yet has nothing to show.
  const json second = get(c, "/v1/jobs/" + id)["results"][1];
  EXPECT_EQ(second["status"], "queued");
  EXPECT_FALSE(second.contains("progress"));
  ASSERT_TRUE(c.Delete(("/v1/jobs/" + id).c_str()));
  EXPECT_EQ(wait_batch(c, id, 10000)["status"], "cancelled");
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(PageBatch, RefusalsNameTheFieldAndABatchCountsAgainstMaxJobs) {
  ServerProcess s({"--max-jobs", "4", "--max-pdf-pages", "6"});
  auto c = s.client();
  const std::string pdf = four_page_pdf();
  const json png = {{"type", "image_url"}, {"image_url", {{"url", png_data_uri()}}}};
  auto refusal = [&](const json& body) {
    auto r = post_json(c, "/v1/jobs", body);
    if (!r) return json();
    json e = json::parse(r->body)["error"];
    e["status"] = r->status;
    return e;
  };
  json two_pdfs = batch_body(file_part(pdf));
  two_pdfs["messages"][0]["content"].push_back(file_part(pdf));
  json not_bool = batch_body(file_part(pdf));
  not_bool["per_page"] = "yes";
  json streamed = batch_body(file_part(pdf));
  streamed["stream"] = true;
  struct Case {
    std::string name;
    json body;
    int status;
    std::string param;
  };
  const std::vector<Case> cases = {
      {"no PDF", batch_body(png), 400, "per_page"},
      {"two PDFs", two_pdfs, 400, "per_page"},
      {"per_page not a boolean", not_bool, 400, "per_page"},
      {"streamed", streamed, 400, "stream"},
      {"page 9 of 4", batch_body(file_part(pdf, "9")), 400, "messages[0].content[0].file.pages"},
      {"encrypted", batch_body(file_part(encrypted_pdf())), 400, "messages[0].content[0].file.file_data"},
      {"more pages than --max-pdf-pages",
       batch_body(file_part(pdf_of_pages(std::vector<PdfPageSpec>(7, box_page(100, 100))))), 413,
       "messages[0].content[0].file"},
      {"more pages than --max-jobs",
       batch_body(file_part(pdf_of_pages(std::vector<PdfPageSpec>(5, box_page(100, 100))))), 413, "per_page"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const json e = refusal(k.body);
    EXPECT_EQ(e["status"], k.status) << e.dump();
    EXPECT_EQ(e["param"], k.param) << e.dump();
  }
  EXPECT_EQ(s.metric("qvl_jobs_stored"), 0);  // nothing refused left a job behind

  // A 3-page batch takes three of the four job places: a second one must
  // wait until pages finish and make room (finished jobs are evicted first).
  auto first = post_json(c, "/v1/jobs", batch_body(file_part(pdf, "1-3"), 3000));
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 202) << first->body;
  const json busy = refusal(batch_body(file_part(pdf, "1-2")));
  EXPECT_EQ(busy["status"], 429) << busy.dump();
  EXPECT_EQ(busy["code"], "too_many_jobs");
  ASSERT_EQ(c.Delete(("/v1/jobs/" + json::parse(first->body)["id"].get<std::string>()).c_str())->status, 200);
  auto second = post_json(c, "/v1/jobs", batch_body(file_part(pdf, "1-2")));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 202) << second->body;
  EXPECT_EQ(wait_batch(c, json::parse(second->body)["id"])["status"], "succeeded");
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(PageBatch, ShutdownEndsABatchCleanly) {
  ServerProcess s({"--shutdown-grace", "1"});
  auto c = s.client();
  const std::string pdf = pdf_of_pages(std::vector<PdfPageSpec>(8, box_page(320, 240)));
  auto r = post_json(c, "/v1/jobs", batch_body(file_part(pdf), 3000));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = json::parse(r->body)["id"];
  ASSERT_TRUE(eventually([&] { return get(c, "/v1/jobs/" + id)["status"] == "running"; }, 20000));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(s.stop(), 0) << s.log();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 15);
}

}  // namespace
}  // namespace qvl::test
