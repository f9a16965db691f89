// The commands' option declarations (cli/options.cpp): defaults read from the
// structs, every name declared once per command, typed range errors from the
// binary, environment variables, and docs/api.md's list of serve's options
// against `qvl serve --help-markdown`.
#include "cli/options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "run_qvl.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

using test::run_qvl;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void parse(Args& a, std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (auto& w : argv) ptrs.push_back(w.data());
  ASSERT_TRUE(a.parse(static_cast<int>(ptrs.size()), ptrs.data(), 0));
}

const Option& option(const Args& a, const std::string& name) {
  for (const auto& o : a.options())
    if (o->name() == name) return *o;
  throw Error("no option --" + name);
}

// The environment variables the declarations read, cleared so the machine's do not leak in.
struct CleanEnv {
  ScopedEnv e[12] = {{"QVL_MODEL", nullptr},          {"QVL_WEIGHTS", nullptr},    {"QVL_PRECISION", nullptr},
                     {"QVL_THREADS", nullptr},        {"QVL_CTX_SIZE", nullptr},   {"QVL_KV_TYPE", nullptr},
                     {"QVL_IMAGE_CACHE_MB", nullptr}, {"QVL_HOST", nullptr},       {"QVL_PORT", nullptr},
                     {"QVL_PARALLEL", nullptr},       {"HF_HUB_OFFLINE", nullptr}, {"HF_TOKEN", nullptr}};
};

TEST(Options, UnsetFlagsLeaveTheStructsDefaults) {
  CleanEnv clean;
  ModelChoice model;
  EngineParams engine;
  ServerOptions server;
  GenerateRequest request;
  Args a("serve", "", "");
  visit_options(model, a);
  visit_options(engine, a);
  visit_options(server, a);
  parse(a, {});
  const EngineParams e0;
  EXPECT_EQ(engine.weights, e0.weights);
  EXPECT_EQ(engine.ctx_size, e0.ctx_size);
  EXPECT_EQ(engine.batch, e0.batch);
  EXPECT_EQ(engine.image_cache_bytes, e0.image_cache_bytes);
  EXPECT_FALSE(engine.kv_type);
  const ServerOptions s0;
  EXPECT_EQ(server.host, s0.host);
  EXPECT_EQ(server.port, s0.port);
  EXPECT_EQ(server.max_body_bytes, s0.max_body_bytes);
  EXPECT_EQ(server.scheduler.timeout_s, s0.scheduler.timeout_s);
  EXPECT_EQ(server.repetition_guard.window, s0.repetition_guard.window);
  EXPECT_EQ(model.source.revision, ModelSourceOptions{}.revision);
  // --help shows the initialisers, not numbers written a second time.
  EXPECT_EQ(option(a, "ctx-size").default_text(), std::to_string(e0.ctx_size));
  EXPECT_EQ(option(a, "image-cache-mb").default_text(), std::to_string(e0.image_cache_bytes >> 20));
  EXPECT_EQ(option(a, "max-body-bytes").default_text(), std::to_string(s0.max_body_bytes));
  EXPECT_EQ(option(a, "repetition-guard").default_text(), std::to_string(RepetitionGuardOptions{}.window));
  EXPECT_FALSE(engine.weights);  // unset: the one default rule (model/default_weights.h) decides
  EXPECT_NE(option(a, "weights").default_text().find("half the memory"), std::string::npos);
}

TEST(Options, ValuesReachTheirMembers) {
  CleanEnv clean;
  ModelChoice model;
  EngineParams engine;
  ServerOptions server;
  Args a("serve", "", "");
  visit_options(model, a);
  visit_options(engine, a);
  visit_options(server, a);
  parse(a, {"--model",
            "m",
            "--weights",
            "q8",
            "--kv-type",
            "f16",
            "--image-cache-mb",
            "3",
            "--min-pixels",
            "4096",
            "--parallel",
            "2",
            "--timeout",
            "2.5",
            "--max-image-bytes",
            "1000",
            "--job-ttl",
            "7",
            "--log-format",
            "json",
            "--allow-remote-images",
            "--repetition-guard",
            "4",
            "--repetition-guard-repeats",
            "2",
            "--source",
            "ms",
            "--offline"});
  EXPECT_EQ(model.model, "m");
  EXPECT_EQ(engine.weights, WeightFormat::Q8);
  EXPECT_EQ(engine.kv_type, KvType::F16);
  EXPECT_EQ(engine.image_cache_bytes, size_t{3} << 20);
  EXPECT_EQ(engine.min_pixels, 4096);
  EXPECT_EQ(server.scheduler.parallel, 2);
  EXPECT_EQ(server.scheduler.timeout_s, 2.5);
  EXPECT_EQ(server.media.max_image_bytes, 1000u);
  EXPECT_EQ(server.jobs.ttl_s, 7);
  EXPECT_EQ(server.log_format, "json");
  EXPECT_TRUE(server.media.allow_remote);
  EXPECT_EQ(server.repetition_guard.window, 4);
  EXPECT_EQ(server.repetition_guard.min_repeats, 2);
  EXPECT_EQ(model.source.source, "ms");
  EXPECT_TRUE(model.source.offline);
}

TEST(Options, SamplingFlagsNotGivenStayUnset) {
  GenerateRequest r;
  Args a("run", "", "");
  visit_options(r, a);
  parse(a, {"--temperature", "0", "--seed", "9", "--stop", "a", "--stop", "b"});
  EXPECT_EQ(r.sampling.temperature, 0.0);
  EXPECT_EQ(r.sampling.seed, 9u);
  EXPECT_FALSE(r.sampling.top_p);
  EXPECT_FALSE(r.sampling.top_k);
  EXPECT_EQ(r.max_tokens, 0);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
}

TEST(Options, ModelSourceReadsTheHubsEnvironment) {
  CleanEnv clean;
  auto source = [](std::vector<std::string> argv) {
    ModelSourceOptions o;
    Args a("pull", "", "");
    visit_options(o, a);
    parse(a, std::move(argv));
    return o;
  };
  ScopedEnv t("HF_TOKEN", "tok"), off("HF_HUB_OFFLINE", "0");
  ModelSourceOptions o = source({"--revision", "v1", "--source", "modelscope", "--endpoint", "http://m"});
  EXPECT_EQ(o.revision, "v1");
  EXPECT_EQ(o.source, "modelscope");
  EXPECT_EQ(o.endpoint, "http://m");
  EXPECT_EQ(o.hf_token, "tok");
  EXPECT_FALSE(o.offline);  // HF_HUB_OFFLINE=0 is off
  EXPECT_TRUE(source({"--offline"}).offline);
  EXPECT_EQ(source({}).revision, "main");
  {
    ScopedEnv on("HF_HUB_OFFLINE", "1");
    EXPECT_TRUE(source({}).offline);
  }
  ModelSourceOptions bad;
  Args a("pull", "", "");
  visit_options(bad, a);
  std::string w0 = "--source", w1 = "nope";
  char* argv[] = {w0.data(), w1.data()};
  EXPECT_THROW(a.parse(2, argv, 0), UsageError);
}

// Each command declares its groups on one Args, which refuses a name declared
// twice: every command's --help runs through all its declarations.
TEST(Options, EveryCommandDeclaresEachNameOnce) {
  for (const char* cmd : {"run", "chat", "serve", "bench", "info", "tokenize", "pull", "models"}) {
    test::QvlResult r = run_qvl({cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find("usage: qvl " + std::string(cmd)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--help"), std::string::npos) << r.out;
  }
}

// run, chat and serve read the one repetition-guard declaration: the same text everywhere.
TEST(Options, TheRepetitionGuardIsDeclaredOnce) {
  auto line = [](const std::string& help) {
    size_t at = help.find("  --repetition-guard N");
    return at == std::string::npos ? std::string() : help.substr(at, help.find("  --", at + 4) - at);
  };
  const std::string serve = line(run_qvl({"serve", "--help"}).out);
  ASSERT_FALSE(serve.empty());
  EXPECT_EQ(line(run_qvl({"run", "--help"}).out), serve);
  EXPECT_EQ(line(run_qvl({"chat", "--help"}).out), serve);
}

TEST(Options, ABadValueIsOneLineWithTheFlagTheValueAndTheRange) {
  test::QvlResult r = run_qvl({"run", "--model", "/nowhere", "--prompt", "hi", "--ctx-size", "5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "qvl run: --ctx-size: 5 is out of range [16, 16777216]\n");
  r = run_qvl({"serve", "--model", "/nowhere", "--timeout", "soon"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "qvl serve: --timeout: soon is not a number\n");
  r = run_qvl({"serve", "--model", "/nowhere", "--log-format", "xml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "qvl serve: --log-format: xml is not one of text, json\n");
  r = run_qvl({"serve", "--model", "/nowhere", "--allowed-media-dir", "/no/such/dir"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "qvl serve: --allowed-media-dir: /no/such/dir is not a folder\n");
}

TEST(Options, EnvironmentVariablesAreCheckedLikeFlags) {
  ScopedEnv e("QVL_CTX_SIZE", "5");
  test::QvlResult r = run_qvl({"serve", "--model", "/nowhere"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "qvl serve: --ctx-size: 5 (from QVL_CTX_SIZE) is out of range [16, 16777216]\n");
  // The flag wins over the variable: the error is then the missing --prompt.
  r = run_qvl({"run", "--model", "/nowhere", "--ctx-size", "64"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "qvl run: --prompt is required (see qvl run --help)\n");
}

TEST(Options, CommandsOwnDefaultsShowInTheirHelp) {
  // run caches no image embeddings; bench's context is 8 slots of 4096 tokens (its clip takes
  // 2.3k; 8 streams decode together).
  EXPECT_NE(run_qvl({"run", "--help"}).out.find("integer in [0, 1048576]; default: 0;"), std::string::npos);
  EXPECT_NE(run_qvl({"bench", "--help"}).out.find("integer in [16, 16777216]; default: 32768;"), std::string::npos);
}

// docs/api.md lists serve's options as `qvl serve --help-markdown` prints them.
TEST(Options, DocsListServesOptionsAsDeclared) {
  const std::string path = std::string(QVL_FIXTURES_DIR) + "/../../docs/api.md";
  std::ifstream f(path);
  ASSERT_TRUE(f) << path;
  std::stringstream text;
  text << f.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- qvl serve --help-markdown: generated;",
                    end = "<!-- end of qvl serve --help-markdown -->";
  size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << path << " has no " << begin;
  ASSERT_NE(e, std::string::npos) << path << " has no " << end;
  b = doc.find('\n', b) + 1;
  std::string section = doc.substr(b, e - b);
  while (!section.empty() && section.front() == '\n') section.erase(0, 1);
  while (section.size() > 1 && section[section.size() - 2] == '\n') section.pop_back();
  test::QvlResult r = run_qvl({"serve", "--help-markdown"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(section, r.out) << "docs/api.md's table of serve options differs from the declarations: paste the output "
                               "of `qvl serve --help-markdown` between its two markers";
}

}  // namespace
}  // namespace qvl::cli
