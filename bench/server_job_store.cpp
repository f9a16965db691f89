// The time a job spends in the job store (src/server/jobs/job_store.h), per
// backend: submit -> claimed (add, then a runner's claim) and finished ->
// visible (finish, then a poll's get), plus one heartbeat, with a body of
// the size of a chat request holding a small image (as a data: URL, so the
// durable stores' media-once path is in the figures). Prints JSON; the
// issue's aim is under 5 ms added per job. PostgreSQL when given a URL
// (bench/server_job_store_postgres.sh starts a throwaway server for it).
//   build/bench/server_job_store [--jobs N] [--body-bytes B] [--postgres URL]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/jobs/job_store_open.h"

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

json summary(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {{"p50_ms", at(0.5)}, {"p99_ms", at(0.99)}, {"max_ms", v.back()}};
}

json run(const std::string& url, int jobs, size_t body_bytes) {
  qvl::JobStoreOptions o;
  o.url = url;
  o.max_jobs = jobs + 1;
  o.max_bytes = int64_t{1} << 40;
  auto store = qvl::open_job_store(o);
  const json image = {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + std::string(body_bytes, 'A')}}}};
  const json text = {{"type", "text"}, {"text", "What is on this invoice?"}};
  const std::string body = json{{"messages", {{{"role", "user"}, {"content", {image, text}}}}}}.dump();
  const json result = {{"object", "chat.completion"},
                       {"choices", {{{"message", {{"content", std::string(400, 'y')}}}}}}};
  std::vector<double> claimed, visible, beat;
  for (int i = 0; i < jobs; ++i) {
    qvl::JobRecord j;
    j.id = qvl::new_job_id();
    j.model = "m";
    j.body = body;
    auto t0 = Clock::now();
    if (!store->add({j}, nullptr)) throw std::runtime_error("store full");
    auto c = store->claim("bench", 2);
    claimed.push_back(ms_since(t0));
    if (!c || c->job.id != j.id) throw std::runtime_error("claimed another job");
    t0 = Clock::now();
    store->heartbeat(j.id, "bench", 10, std::string(200, 'z'));
    beat.push_back(ms_since(t0));
    t0 = Clock::now();
    store->finish(j.id, "bench", qvl::JobState::Succeeded, result, nullptr);
    const auto g = store->get(j.id);
    visible.push_back(ms_since(t0));
    if (!g || g->state != qvl::JobState::Succeeded) throw std::runtime_error("finished job not visible");
  }
  return {{"store", store->name()},
          {"submit_to_claimed", summary(claimed)},
          {"finished_to_visible", summary(visible)},
          {"heartbeat", summary(beat)}};
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 500;
  size_t body_bytes = 64 << 10;
  std::string postgres;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--jobs") jobs = std::atoi(argv[i + 1]);
    else if (a == "--body-bytes") body_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--postgres") postgres = argv[i + 1];
  }
  char dir[] = "/tmp/qvl-bench-store-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  json out = {{"jobs", jobs}, {"body_bytes", body_bytes}, {"backends", json::array()}};
  try {
    out["backends"].push_back(run("memory", jobs, body_bytes));
    out["backends"].push_back(run(std::string("sqlite:") + dir + "/jobs.db", jobs, body_bytes));
    if (!postgres.empty()) out["backends"].push_back(run(postgres, jobs, body_bytes));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "server_job_store: %s\n", e.what());
    std::filesystem::remove_all(dir);
    return 1;
  }
  std::filesystem::remove_all(dir);
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
