// /metrics for an operator's dashboard: the standard Prometheus process
// figures (memory, CPU, descriptors, start time) with sane values, and the
// loaded model's facts from EngineInfo.
#include <ctime>

#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

std::string metrics_text(ServerProcess& s) {
  auto r = s.client().Get("/metrics");
  EXPECT_TRUE(r && r->status == 200);
  return r ? r->body : "";
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

using MetricsTest = SharedServerSuite;

TEST_F(MetricsTest, ProcessFiguresHaveHelpTypeAndSaneValues) {
  const std::string text = metrics_text(*server_);
  const std::vector<std::pair<std::string, std::string>> names = {
      {"process_resident_memory_bytes", "gauge"}, {"process_virtual_memory_bytes", "gauge"},
      {"process_cpu_seconds_total", "counter"},   {"process_open_fds", "gauge"},
      {"process_max_fds", "gauge"},               {"process_start_time_seconds", "gauge"}};
  for (const auto& [name, type] : names) {
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
    EXPECT_TRUE(has_line(text, "# TYPE " + name + " " + type)) << name;
  }
  const double rss = server_->metric("process_resident_memory_bytes");
  EXPECT_GT(rss, 1 << 20);
  EXPECT_LT(rss, 64.0 * (1ull << 30));
  EXPECT_GE(server_->metric("process_virtual_memory_bytes"), rss);
  EXPECT_GE(server_->metric("process_cpu_seconds_total"), 0);
  const double fds = server_->metric("process_open_fds");
  EXPECT_GE(fds, 3);  // stdin/out/err at least, plus the listening socket
  EXPECT_GE(server_->metric("process_max_fds"), fds);
  const double now = static_cast<double>(std::time(nullptr));
  const double start = server_->metric("process_start_time_seconds");
  EXPECT_LE(start, now + 2);  // clock ticks round down; allow for it
  EXPECT_GT(start, now - 3600);
}

TEST_F(MetricsTest, CpuSecondsGrowWithWork) {
  const double before = server_->metric("process_cpu_seconds_total");
  for (int i = 0; i < 3; ++i) {
    httplib::Client c = server_->client();
    auto r = post_json(c, "/v1/chat/completions", chat_body("Describe this image.", png_data_uri(), 64));
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  }
  EXPECT_GT(server_->metric("process_cpu_seconds_total"), before);
}

TEST_F(MetricsTest, ModelFactsFromTheEngine) {
  const std::string text = metrics_text(*server_);
  EXPECT_TRUE(has_line(text, "# TYPE qvl_model_info gauge"));
  // The tiny fixture is bf16; the default KV type for bf16 weights is f32.
  EXPECT_TRUE(has_line(text, "qvl_model_info{weights=\"bf16\",kv_type=\"f32\",fast_matmul=\"false\"} 1")) << text;
  EXPECT_EQ(server_->metric("qvl_threads"), 1);  // ServerProcess passes --threads 1
  auto r = server_->client().Get("/v1/qvl/config");
  ASSERT_TRUE(r && r->status == 200);
  const json config = json::parse(r->body);
  // Over all slots, so at least one slot's context (what /v1/qvl/config shows).
  EXPECT_GE(server_->metric("qvl_context_tokens"), config.at("context_size").get<double>());
  EXPECT_GT(server_->metric("qvl_context_tokens"), 0);
  EXPECT_GT(server_->metric("qvl_kv_cache_bytes"), 0);
  EXPECT_GT(server_->metric("qvl_weights_bytes"), 0);
}

}  // namespace
}  // namespace qvl::test
