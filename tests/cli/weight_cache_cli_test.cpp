// qvl quantize, qvl models and run's use of the weight cache, through the
// binary on the fixture model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_qvl.h"

namespace qvl::cli {
namespace {

namespace fs = std::filesystem;
using test::run_qvl;

const std::string kModel = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("qvl_wc_cli_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  size_t files() const { return std::distance(fs::directory_iterator(path), fs::directory_iterator()); }
};

TEST(WeightCacheCli, QuantizeWritesOnceAndModelsListsIt) {
  TempDir cache("quantize"), hub("hub");
  test::QvlResult r = run_qvl({"quantize", "--model", kModel, "--weights", "q4", "--threads", "2", "--weight-cache",
                               cache.path.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "written");
  EXPECT_EQ(j["weights"], "q4");
  const std::string file = j["cache_file"];
  EXPECT_EQ(fs::path(file).parent_path(), cache.path);
  EXPECT_TRUE(fs::exists(file));

  r = run_qvl({"quantize", "--model", kModel, "--weights", "q4", "--threads", "2", "--weight-cache",
               cache.path.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["status"], "already cached");
  EXPECT_EQ(cache.files(), 1u);

  r = run_qvl({"models", "--cache-dir", hub.path.string(), "--weight-cache", cache.path.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(fs::path(file).filename().string().substr(0, 12) + "  q4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fs::canonical(kModel).string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weight cache: " + cache.path.string()), std::string::npos) << r.out;

  r = run_qvl({"quantize", "--model", kModel, "--weights", "bf16"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--weights"), std::string::npos) << r.err;
}

// run writes the cache at its first q4 load and maps it at the next; the
// answer is the same as without the cache; --no-weight-cache writes nothing.
TEST(WeightCacheCli, RunUsesTheCacheAndAnswersTheSame) {
  TempDir cache("run"), unused("unused");
  auto run = [&](const fs::path& dir, bool no_cache) {
    std::vector<std::string> args = {"run", "--model", kModel, "--weights", "q4", "--threads", "2", "--prompt",
                                     "Describe a cat.", "--temperature", "0", "--max-tokens", "12", "--ignore-eos",
                                     "--output-format", "json", "--weight-cache", dir.string()};
    if (no_cache) args.push_back("--no-weight-cache");
    test::QvlResult r = run_qvl(args);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    return nlohmann::json::parse(r.out)["token_ids"];
  };
  const nlohmann::json plain = run(unused.path, true);
  EXPECT_EQ(unused.files(), 0u);
  EXPECT_EQ(run(cache.path, false), plain);  // converts and writes
  EXPECT_EQ(cache.files(), 1u);
  EXPECT_EQ(run(cache.path, false), plain);  // maps
  EXPECT_EQ(plain.size(), 12u);
}

}  // namespace
}  // namespace qvl::cli
