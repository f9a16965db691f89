// qvl embed and qvl rerank on the tiny model (used as both checkpoints, as
// tests/fixtures/golden-embed does): the JSON they print against the goldens,
// the task rule (--task, or the script the folder ships; never a guess), and
// their usage errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_qvl.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixtures = QVL_FIXTURES_DIR;
const std::string kTiny = kFixtures + "/tiny-qwen3vl";

const json& golden() {
  static const json m = json::parse(std::ifstream(kFixtures + "/golden-embed/manifest.json"));
  return m;
}

const json& golden_case(const char* list, const std::string& name) {
  for (const json& c : golden()[list])
    if (c["name"] == name) return c;
  throw std::runtime_error(name);
}

double max_abs_diff(const json& a, const json& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i].get<double>() - b[i].get<double>()));
  return m;
}

// A folder that is the tiny model plus the script a Qwen3-VL-Embedding or
// -Reranker repo ships (the files linked, not copied).
struct ShippedFolder {
  fs::path dir;
  explicit ShippedFolder(const std::vector<std::string>& scripts) {
    dir = fs::temp_directory_path() / ("qvl-shipped-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(dir / "scripts");
    for (const auto& f : fs::directory_iterator(kTiny)) fs::create_symlink(fs::absolute(f.path()), dir / f.path().filename());
    for (const std::string& s : scripts) std::ofstream(dir / "scripts" / s) << "# the official script\n";
  }
  ~ShippedFolder() { fs::remove_all(dir); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

TEST(EmbedCli, TextAndImageInputsMatchTheGoldens) {
  const json& text = golden_case("embeddings", "query_instruction");
  const json& image = golden_case("embeddings", "image");
  QvlResult r = run_qvl({"embed", "--model", kTiny, "--task", "embed", "--weights", "f32", "--threads", "2",
                         "--instruction", text["input"]["instruction"].get<std::string>(), "--text", text["input"]["text"].get<std::string>(),
                         "--image", kFixtures + "/golden/images/gradient_320x240.png"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json out = json::parse(r.out);
  ASSERT_EQ(out["data"].size(), 2u);
  EXPECT_EQ(out["dimensions"], 64);
  EXPECT_EQ(out["data"][0]["source"], "text 1");
  EXPECT_EQ(out["data"][0]["prompt_tokens"], text["num_tokens"]);
  EXPECT_LE(max_abs_diff(out["data"][0]["embedding"], text["embedding"]), 1e-3);
  // --instruction applies to the image too: its tokens replace the default's.
  const int longer = text["num_tokens"].get<int>() - golden_case("embeddings", "query_default")["num_tokens"].get<int>();
  EXPECT_EQ(out["data"][1]["prompt_tokens"], image["num_tokens"].get<int>() + longer);
  EXPECT_EQ(out["data"][1]["source"], kFixtures + "/golden/images/gradient_320x240.png");
  // The CLI's instruction applies to every input; the image's golden has the default one.
  QvlResult plain = run_qvl({"embed", "--model", kTiny, "--task", "embed", "--weights", "f32", "--threads", "2",
                             "--image", kFixtures + "/golden/images/gradient_320x240.png", "--dimensions", "16"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  const json p = json::parse(plain.out);
  EXPECT_EQ(p["dimensions"], 16);
  EXPECT_LE(max_abs_diff(p["data"][0]["embedding"], image["mrl"]["16"]), 1e-3);
  EXPECT_EQ(p["usage"]["prompt_tokens"], image["num_tokens"]);
}

// --inputs: the official scripts' input objects, files relative to the JSON file.
TEST(EmbedCli, InputsFileTakesTheScriptsShape) {
  const fs::path dir = fs::temp_directory_path() / ("qvl-inputs-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const json& mixed = golden_case("embeddings", "image_text");
  const json& empty = golden_case("embeddings", "empty");
  std::ofstream(dir / "inputs.json") << json::array(
      {{{"image", fs::absolute(kFixtures + "/golden/images/text_400x128.png").string()}, {"text", mixed["input"]["text"].get<std::string>()}},
       json::object()})
                                            .dump();
  QvlResult r = run_qvl({"embed", "--model", kTiny, "--task", "embed", "--weights", "f32", "--threads", "2", "--inputs",
                         (dir / "inputs.json").string()});
  fs::remove_all(dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json out = json::parse(r.out);
  ASSERT_EQ(out["data"].size(), 2u);
  EXPECT_LE(max_abs_diff(out["data"][0]["embedding"], mixed["embedding"]), 1e-3);
  EXPECT_LE(max_abs_diff(out["data"][1]["embedding"], empty["embedding"]), 1e-3);  // {} is the text NULL
}

TEST(RerankCli, ResultsSortedWithTheGoldenScores) {
  const json& calibrated = golden_case("rerank", "calibrated_text");
  const json& positive = golden_case("rerank", "text_text");
  QvlResult r = run_qvl({"rerank", "--model", kTiny, "--task", "rerank", "--weights", "f32", "--threads", "2",
                         "--query", calibrated["input"]["query"]["text"].get<std::string>(), "--document",
                         calibrated["input"]["document"]["text"].get<std::string>(), "--document", positive["input"]["document"]["text"].get<std::string>()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json out = json::parse(r.out);
  ASSERT_EQ(out["results"].size(), 2u);
  EXPECT_EQ(out["results"][0]["index"], 1);  // text_text scores ~1, calibrated_text 0.36
  EXPECT_NEAR(out["results"][1]["relevance_score"].get<double>(), calibrated["score"].get<double>(), 0.025);
  EXPECT_NEAR(out["results"][1]["logit"].get<double>(), calibrated["logit_diff"].get<double>(), 0.1);
  EXPECT_EQ(out["results"][1]["source"], "text 1");
  QvlResult top = run_qvl({"rerank", "--model", kTiny, "--task", "rerank", "--weights", "f32", "--threads", "2",
                           "--query", "q", "--document", "a", "--document", "b", "--top-n", "1"});
  ASSERT_EQ(top.code, 0) << top.err;
  EXPECT_EQ(json::parse(top.out)["results"].size(), 1u);
}

// The checkpoints say Qwen3VLForConditionalGeneration like the chat models:
// without --task, only the script the folder ships decides.
TEST(RetrievalTask, FromTheShippedScriptNeverAGuess) {
  QvlResult none = run_qvl({"embed", "--model", kTiny, "--text", "a"});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("ships neither scripts/qwen3_vl_embedding.py nor scripts/qwen3_vl_reranker.py"),
            std::string::npos) << none.err;
  EXPECT_NE(none.err.find("--task embed"), std::string::npos) << none.err;

  ShippedFolder embedding({"qwen3_vl_embedding.py"});
  QvlResult ok = run_qvl({"embed", "--model", embedding.dir.string(), "--threads", "2", "--text", "a"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  QvlResult wrong = run_qvl({"rerank", "--model", embedding.dir.string(), "--query", "q", "--document", "d"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("it is a Qwen3-VL-Embedding checkpoint"), std::string::npos) << wrong.err;

  ShippedFolder both({"qwen3_vl_embedding.py", "qwen3_vl_reranker.py"});
  QvlResult ambiguous = run_qvl({"embed", "--model", both.dir.string(), "--text", "a"});
  EXPECT_EQ(ambiguous.code, 1);
  EXPECT_NE(ambiguous.err.find("does not say what it is"), std::string::npos) << ambiguous.err;

  QvlResult contradiction = run_qvl({"embed", "--model", kTiny, "--task", "rerank", "--text", "a"});
  EXPECT_EQ(contradiction.code, 2);
  EXPECT_NE(contradiction.err.find("--task rerank contradicts qvl embed"), std::string::npos) << contradiction.err;
}

TEST(RetrievalTask, UsageErrors) {
  QvlResult no_input = run_qvl({"embed", "--model", kTiny, "--task", "embed"});
  EXPECT_EQ(no_input.code, 2);
  EXPECT_NE(no_input.err.find("give at least one --text"), std::string::npos) << no_input.err;
  QvlResult pixels = run_qvl({"embed", "--model", kTiny, "--task", "embed", "--text", "a", "--max-pixels", "100000"});
  EXPECT_EQ(pixels.code, 2);
  EXPECT_NE(pixels.err.find("--max-pixels does not apply"), std::string::npos) << pixels.err;
  QvlResult dims = run_qvl({"embed", "--model", kTiny, "--task", "embed", "--text", "a", "--dimensions", "65"});
  EXPECT_EQ(dims.code, 1);
  EXPECT_NE(dims.err.find("'dimensions' must be in [1, 64]"), std::string::npos) << dims.err;
  QvlResult no_docs = run_qvl({"rerank", "--model", kTiny, "--task", "rerank", "--query", "q"});
  EXPECT_EQ(no_docs.code, 2);
  EXPECT_NE(no_docs.err.find("give at least one --document"), std::string::npos) << no_docs.err;
}

}  // namespace
}  // namespace qvl::test
