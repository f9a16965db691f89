// Model download against a mock hub: a cpp-httplib server on loopback inside
// the test process, serving the tiny fixture model with the Hugging Face hub's
// routes and headers (file listing API, `resolve` with a 302 to a CDN URL for
// LFS files, X-Repo-Commit, ETag / X-Linked-Etag, X-Linked-Size, Range) and
// ModelScope's, with a request log and fault injection (status codes, a
// transfer cut mid-file, a corrupted byte). Covers io/model_source.h in
// process and `qvl pull` / `qvl models` as a user runs them.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "io/hub_cache.h"
#include "io/hub_sha.h"
#include "io/model_config.h"
#include "io/safetensors.h"
#include "io/model_source.h"
#include "util/error.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

const std::string kTiny = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";
const std::string kCommit = "5f0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b";
const std::string kCommit2 = "aaaabbbbccccddddeeeeffff0000111122223333";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct HubFile {
  std::string bytes;
  bool lfs = false;     // served through a redirect to /cdn/<sha256>, as git-lfs files are
  std::string etag;     // sha256 (LFS) or git blob sha1
  std::string sha256;   // for ModelScope's listing
};

struct Repo {
  std::string commit;
  std::map<std::string, std::shared_ptr<const HubFile>> files;
  std::string token;             // non-empty: gated, needs "Authorization: Bearer <token>"
  uint64_t fake_weights_size = 0;  // non-zero: X-Linked-Size lies (for the disk-space check)
};

struct Logged {
  std::string method, path, range, auth;
};

std::shared_ptr<const HubFile> make_file(std::string bytes, bool lfs) {
  auto f = std::make_shared<HubFile>();
  f->bytes = std::move(bytes);
  f->lfs = lfs;
  hub::Sha256 sha;
  sha.update(f->bytes.data(), f->bytes.size());
  f->sha256 = sha.hex();
  if (lfs) {
    f->etag = f->sha256;
  } else {
    hub::Sha1 git = hub::git_blob_hasher(f->bytes.size());
    git.update(f->bytes.data(), f->bytes.size());
    f->etag = git.hex();
  }
  return f;
}

// The fixture files, read and hashed once for the whole test program.
const std::map<std::string, std::shared_ptr<const HubFile>>& fixture_files() {
  static const auto files = [] {
    std::map<std::string, std::shared_ptr<const HubFile>> m;
    for (const auto& e : fs::directory_iterator(kTiny))
      m[e.path().filename().string()] = make_file(slurp(e.path().string()), e.file_size() > 1000000);
    // Files a real repo has that qvl must not download.
    m["README.md"] = make_file("# tiny\n", false);
    m[".gitattributes"] = make_file("*.safetensors filter=lfs\n", false);
    m["pytorch_model.bin"] = make_file(std::string(1000, 'p'), true);
    return m;
  }();
  return files;
}

// Sharded weights: an index and two shards (the fixture's bytes split in two).
const Repo& sharded_repo() {
  static const Repo repo = [] {
    Repo r{kCommit, {}};
    const std::string& w = fixture_files().at("model.safetensors")->bytes;
    for (const char* name : {"config.json", "tokenizer.json", "tokenizer_config.json"})
      r.files[name] = fixture_files().at(name);
    r.files["model-00001-of-00002.safetensors"] = make_file(w.substr(0, w.size() / 2), true);
    r.files["model-00002-of-00002.safetensors"] = make_file(w.substr(w.size() / 2), true);
    r.files["model.safetensors.index.json"] = make_file(
        R"({"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})",
        false);
    return r;
  }();
  return repo;
}

class MockHub {
 public:
  MockHub() {
    repos_["Qwen/Tiny-VL"] = {kCommit, fixture_files()};
    Repo gated = repos_["Qwen/Tiny-VL"];
    gated.token = "hf_secret";
    repos_["Qwen/Gated"] = gated;
    Repo huge = repos_["Qwen/Tiny-VL"];
    huge.fake_weights_size = uint64_t(1) << 60;
    repos_["Qwen/Huge"] = huge;

    srv_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      log_.push_back({req.method, req.path, req.get_header_value("Range"), req.get_header_value("Authorization")});
      if (fail_left_ > 0) {
        --fail_left_;
        res.status = fail_status_;
        res.set_content("{\"error\": \"injected\"}", "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    srv_.Get(R"(/api/models/([^/]+/[^/]+)/revision/(.+))", [this](const auto& req, auto& res) { listing(req, res); });
    srv_.Get(R"(/([^/]+/[^/]+)/resolve/([^/]+)/(.+))", [this](const auto& req, auto& res) { resolve(req, res); });
    srv_.Get(R"(/cdn/([0-9a-f]{64}))", [this](const auto& req, auto& res) { cdn(req, res); });
    srv_.Get(R"(/api/v1/models/([^/]+/[^/]+)/repo/files)", [this](const auto& req, auto& res) { ms_listing(req, res); });
    srv_.Get(R"(/api/v1/models/([^/]+/[^/]+)/repo)", [this](const auto& req, auto& res) { ms_file(req, res); });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    while (!srv_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~MockHub() { stop(); }

  void stop() {
    srv_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void add_repo(const std::string& id, const Repo& repo) {
    std::lock_guard<std::mutex> lock(mu_);
    repos_[id] = repo;
  }

  std::vector<Logged> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  void clear_log() {
    std::lock_guard<std::mutex> lock(mu_);
    log_.clear();
  }
  // The next n requests (any route) answer `status`.
  void fail_next(int n, int status) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_left_ = n, fail_status_ = status;
  }
  // The next transfer of `file`'s bytes stops (connection closed) at byte `at`.
  void cut_once(const std::string& file, uint64_t at) {
    std::lock_guard<std::mutex> lock(mu_);
    cut_[file] = at;
  }
  // `file` is served with the byte at `offset` flipped (the etag stays right).
  void corrupt(const std::string& repo, const std::string& file, size_t offset) {
    std::lock_guard<std::mutex> lock(mu_);
    auto f = std::make_shared<HubFile>(*repos_.at(repo).files.at(file));
    f->bytes[offset] ^= 0x5a;
    corrupt_[file] = f;
  }
  void heal() {
    std::lock_guard<std::mutex> lock(mu_);
    corrupt_.clear();
  }
  // Moves main to a new commit whose config.json differs.
  void push_new_config(const std::string& repo) {
    std::lock_guard<std::mutex> lock(mu_);
    Repo& r = repos_.at(repo);
    r.commit = kCommit2;
    r.files["config.json"] = make_file(r.files["config.json"]->bytes + "\n", false);
  }
  size_t count(const std::string& method, const std::string& path_part) {
    size_t n = 0;
    for (const Logged& l : log()) n += l.method == method && l.path.find(path_part) != std::string::npos;
    return n;
  }

 private:
  // Looks up the repo and checks the token; answers like the hub when not found / not allowed.
  const Repo* find_repo(const httplib::Request& req, httplib::Response& res, const std::string& id) {
    auto it = repos_.find(id);
    if (it == repos_.end()) {
      res.status = 404;
      res.set_header("X-Error-Code", "RepoNotFound");
      res.set_content("{\"error\": \"Repository not found\"}", "application/json");
      return nullptr;
    }
    if (!it->second.token.empty() && req.get_header_value("Authorization") != "Bearer " + it->second.token) {
      res.status = 401;
      res.set_header("X-Error-Code", "GatedRepo");
      res.set_content("{\"error\": \"Access to model " + id + " is restricted.\"}", "application/json");
      return nullptr;
    }
    return &it->second;
  }

  // "Old/Tiny" was renamed to "Qwen/Tiny-VL": the hub answers with relative redirects.
  bool renamed(const httplib::Request& req, httplib::Response& res) {
    if (std::string(req.matches[1]) != "Old/Tiny") return false;
    std::string path = req.path;
    res.status = 307;
    res.set_header("Location", path.replace(path.find("Old/Tiny"), 8, "Qwen/Tiny-VL"));
    return true;
  }

  void listing(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    if (renamed(req, res)) return;
    const Repo* repo = find_repo(req, res, req.matches[1]);
    if (!repo) return;
    std::string rev = req.matches[2];
    if (rev != "main" && rev != repo->commit) {
      res.status = 404;
      res.set_header("X-Error-Code", "RevisionNotFound");
      res.set_content("{\"error\": \"Invalid rev id: " + rev + "\"}", "application/json");
      return;
    }
    nlohmann::json siblings = nlohmann::json::array();
    for (const auto& [name, f] : repo->files) siblings.push_back({{"rfilename", name}});
    nlohmann::json body = {{"id", std::string(req.matches[1])}, {"sha", repo->commit}, {"siblings", siblings}};
    res.set_content(body.dump(), "application/json");
  }

  void resolve(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    if (renamed(req, res)) return;
    const Repo* repo = find_repo(req, res, req.matches[1]);
    if (!repo) return;
    std::string rev = req.matches[2], name = req.matches[3];
    auto it = repo->files.find(name);
    if ((rev != "main" && rev != repo->commit) || it == repo->files.end()) {
      res.status = 404;
      res.set_header("X-Error-Code", it == repo->files.end() ? "EntryNotFound" : "RevisionNotFound");
      return;
    }
    const HubFile& f = *it->second;
    res.set_header("X-Repo-Commit", repo->commit);
    if (f.lfs) {
      // What the hub answers for an LFS file: a redirect whose X-Linked-*
      // headers describe the file, and an ETag that is the pointer's, not the file's.
      res.status = 302;
      res.set_header("Location", url() + "/cdn/" + f.sha256);
      res.set_header("X-Linked-Etag", "\"" + f.etag + "\"");
      uint64_t size = repo->fake_weights_size && name == "model.safetensors" ? repo->fake_weights_size : f.bytes.size();
      res.set_header("X-Linked-Size", std::to_string(size));
      res.set_header("ETag", "\"0000000000000000000000000000000000000000\"");
      return;
    }
    res.set_header("ETag", "\"" + f.etag + "\"");
    serve(req, res, name, it->second);
  }

  void cdn(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string sha = req.matches[1];
    for (const auto& [id, repo] : repos_)
      for (const auto& [name, f] : repo.files)
        if (f->sha256 == sha) return serve(req, res, name, f);
    res.status = 404;
  }

  void ms_listing(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = repos_.find(req.matches[1]);
    if (it == repos_.end() || req.get_param_value("Revision") != "master") {
      // ModelScope answers errors with HTTP 200 and a Code in the body.
      res.set_content(R"({"Code": 10010205001, "Message": "model not exists", "Success": false})", "application/json");
      return;
    }
    nlohmann::json files = nlohmann::json::array();
    for (const auto& [name, f] : it->second.files)
      files.push_back({{"Name", name}, {"Path", name}, {"Type", "blob"}, {"Size", f->bytes.size()},
                       {"Sha256", f->sha256}, {"Revision", it->second.commit}});
    nlohmann::json body = {{"Code", 200}, {"Success", true}, {"Data", {{"Files", files}}}};
    res.set_content(body.dump(), "application/json");
  }

  void ms_file(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = repos_.find(req.matches[1]);
    std::string name = req.get_param_value("FilePath");
    if (it == repos_.end() || !it->second.files.count(name) || req.get_param_value("Revision") != "master") {
      res.status = 404;
      return;
    }
    serve(req, res, name, it->second.files.at(name));
  }

  // File bytes with Range support (by cpp-httplib), optionally corrupted or cut.
  void serve(const httplib::Request&, httplib::Response& res, const std::string& name, std::shared_ptr<const HubFile> f) {
    if (auto c = corrupt_.find(name); c != corrupt_.end()) f = c->second;
    uint64_t cut = UINT64_MAX;
    if (auto c = cut_.find(name); c != cut_.end()) cut = c->second, cut_.erase(c);
    res.set_content_provider(f->bytes.size(), "application/octet-stream",
                             [f, cut](size_t offset, size_t length, httplib::DataSink& sink) {
                               size_t n = std::min<size_t>(length, 1 << 16);
                               if (offset + n > cut) {
                                 if (offset < cut) sink.write(f->bytes.data() + offset, cut - offset);
                                 return false;  // drop the connection mid-file
                               }
                               sink.write(f->bytes.data() + offset, n);
                               return true;
                             });
  }

  httplib::Server srv_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, Repo> repos_;
  std::vector<Logged> log_;
  int fail_left_ = 0, fail_status_ = 500;
  std::map<std::string, uint64_t> cut_;
  std::map<std::string, std::shared_ptr<const HubFile>> corrupt_;
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "qvl_hub_test_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

class Hub : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* h = getenv("HF_HOME")) saved_hf_home_ = h;
    setenv("HF_HOME", tmp_.path().c_str(), 1);  // no saved token from the real home
    opts_.cache_dir = tmp_ / "hub";
    opts_.endpoint = hub_.url();
    opts_.retry_base_ms = 1;
    opts_.progress = false;
  }
  void TearDown() override {
    if (saved_hf_home_) setenv("HF_HOME", saved_hf_home_->c_str(), 1);
    else unsetenv("HF_HOME");
  }
  std::string repo_dir(const std::string& repo) { return opts_.cache_dir + "/" + hub::repo_folder_name(repo); }
  std::vector<std::string> incomplete_files(const std::string& repo) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(repo_dir(repo) + "/blobs", ec))
      if (e.path().extension() == ".incomplete") out.push_back(e.path().string());
    return out;
  }
  void expect_same_as_fixture(const std::string& dir) {
    for (const char* name : {"config.json", "model.safetensors", "tokenizer.json", "chat_template.json",
                             "preprocessor_config.json", "generation_config.json", "tokenizer_config.json"})
      EXPECT_TRUE(slurp(dir + "/" + name) == fixture_files().at(name)->bytes) << name;
  }

  TempDir tmp_;
  MockHub hub_;
  ModelSourceOptions opts_;
  std::optional<std::string> saved_hf_home_;
};

TEST_F(Hub, FirstRunDownloadsSecondRunTouchesNoNetwork) {
  std::string dir = resolve_model("Qwen/Tiny-VL", opts_);
  EXPECT_EQ(dir, repo_dir("Qwen/Tiny-VL") + "/snapshots/" + kCommit);
  expect_same_as_fixture(dir);
  // The layout huggingface_hub writes: relative symlinks to blobs named by etag, refs/main.
  EXPECT_EQ(fs::read_symlink(dir + "/model.safetensors").string(),
            "../../blobs/" + fixture_files().at("model.safetensors")->sha256);
  EXPECT_EQ(fs::read_symlink(dir + "/config.json").string(), "../../blobs/" + fixture_files().at("config.json")->etag);
  EXPECT_EQ(slurp(repo_dir("Qwen/Tiny-VL") + "/refs/main"), kCommit);
  EXPECT_TRUE(incomplete_files("Qwen/Tiny-VL").empty());
  // Only the files qvl reads were fetched.
  for (const char* skipped : {"video_preprocessor_config.json", "README.md", "pytorch_model.bin", ".gitattributes"}) {
    EXPECT_FALSE(fs::exists(dir + "/" + skipped)) << skipped;
    EXPECT_EQ(hub_.count("GET", skipped) + hub_.count("HEAD", skipped), 0u) << skipped;
  }
  EXPECT_EQ(hub_.count("GET", "/api/models/Qwen/Tiny-VL/revision/main"), 1u);
  EXPECT_EQ(hub_.count("GET", "/cdn/"), 2u);  // model.safetensors and tokenizer.json, through the redirect
  // It loads: the folder reader and the weights follow the snapshot's symlinks.
  ModelFolder folder = ModelFolder::open(dir);
  EXPECT_EQ(folder.config.model_type, "qwen3_vl");
  SafeTensors weights = SafeTensors::open(folder.weights_path);
  EXPECT_TRUE(weights.find("model.language_model.embed_tokens.weight") != nullptr);

  hub_.clear_log();
  EXPECT_EQ(resolve_model("Qwen/Tiny-VL", opts_), dir);
  EXPECT_TRUE(hub_.log().empty()) << hub_.log().size() << " requests on the second run";
}

TEST_F(Hub, CutTransferResumesWithinTheRunFromTheByteWhereItStopped) {
  const uint64_t cut = 5000000;
  hub_.cut_once("model.safetensors", cut);
  std::string dir = resolve_model("Qwen/Tiny-VL", opts_);
  expect_same_as_fixture(dir);
  std::vector<std::string> ranges;
  for (const Logged& l : hub_.log())
    if (l.method == "GET" && l.path.find("/cdn/" + fixture_files().at("model.safetensors")->sha256) == 0)
      ranges.push_back(l.range);
  EXPECT_EQ(ranges, (std::vector<std::string>{"", "bytes=" + std::to_string(cut) + "-"}));
}

TEST_F(Hub, CutTransferResumesInTheNextRunAndNothingHalfWrittenIsUsed) {
  const uint64_t cut = 7777777;
  hub_.cut_once("model.safetensors", cut);
  opts_.max_retries = 0;
  std::string msg = error_of([&] { resolve_model("Qwen/Tiny-VL", opts_); });
  EXPECT_NE(msg.find("cannot reach " + hub_.url()), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(cut)), std::string::npos) << msg;  // says where it stopped
  ASSERT_EQ(incomplete_files("Qwen/Tiny-VL").size(), 1u);
  EXPECT_EQ(fs::file_size(incomplete_files("Qwen/Tiny-VL")[0]), cut);
  EXPECT_FALSE(fs::exists(repo_dir("Qwen/Tiny-VL") + "/refs/main"));
  // The half-written file is never used: offline there is no model yet.
  ModelSourceOptions offline = opts_;
  offline.offline = true;
  EXPECT_NE(error_of([&] { resolve_model("Qwen/Tiny-VL", offline); }).find("not in the cache"), std::string::npos);

  hub_.clear_log();
  std::string dir = resolve_model("Qwen/Tiny-VL", opts_);
  expect_same_as_fixture(dir);
  std::vector<std::string> ranges;
  for (const Logged& l : hub_.log())
    if (l.method == "GET" && l.path.find("/cdn/" + fixture_files().at("model.safetensors")->sha256) == 0)
      ranges.push_back(l.range);
  EXPECT_EQ(ranges, (std::vector<std::string>{"bytes=" + std::to_string(cut) + "-"}));
  EXPECT_TRUE(incomplete_files("Qwen/Tiny-VL").empty());
}

TEST_F(Hub, CorruptedByteIsDetectedAndTheFileRemoved) {
  hub_.corrupt("Qwen/Tiny-VL", "model.safetensors", 123456);
  std::string msg = error_of([&] { resolve_model("Qwen/Tiny-VL", opts_); });
  EXPECT_NE(msg.find("checksum mismatch for model.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected sha256 " + fixture_files().at("model.safetensors")->sha256), std::string::npos) << msg;
  EXPECT_NE(msg.find("removed, re-run"), std::string::npos) << msg;
  EXPECT_TRUE(incomplete_files("Qwen/Tiny-VL").empty());
  EXPECT_FALSE(fs::exists(repo_dir("Qwen/Tiny-VL") + "/blobs/" + fixture_files().at("model.safetensors")->sha256));
  EXPECT_FALSE(fs::exists(repo_dir("Qwen/Tiny-VL") + "/refs/main"));
  // A small (git) file is checked against its git blob id.
  hub_.heal();
  hub_.corrupt("Qwen/Tiny-VL", "config.json", 10);
  opts_.cache_dir = tmp_ / "fresh-cache";
  msg = error_of([&] { resolve_model("Qwen/Tiny-VL", opts_); });
  EXPECT_NE(msg.find("checksum mismatch for config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("git blob id"), std::string::npos) << msg;
  hub_.heal();
  expect_same_as_fixture(resolve_model("Qwen/Tiny-VL", opts_));
}

TEST_F(Hub, GatedRepoNeedsAToken) {
  std::string msg = error_of([&] { resolve_model("Qwen/Gated", opts_); });
  EXPECT_NE(msg.find("HTTP 401"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gated or private"), std::string::npos) << msg;
  EXPECT_NE(msg.find("set HF_TOKEN or pass --hf-token"), std::string::npos) << msg;
  opts_.hf_token = "wrong";
  EXPECT_NE(error_of([&] { resolve_model("Qwen/Gated", opts_); }).find("not accepted"), std::string::npos);
  opts_.hf_token = "hf_secret";
  hub_.clear_log();
  expect_same_as_fixture(resolve_model("Qwen/Gated", opts_));
  for (const Logged& l : hub_.log())
    if (l.path.find("/cdn/") != 0) {
      EXPECT_EQ(l.auth, "Bearer hf_secret") << l.path;
    }
  // huggingface-cli login's saved token is used when none is given.
  TempDir home;
  std::ofstream(home / "token") << "hf_secret\n";
  setenv("HF_HOME", home.path().c_str(), 1);
  ModelSourceOptions saved = opts_;
  saved.hf_token.clear();
  saved.cache_dir = tmp_ / "other-cache";
  expect_same_as_fixture(resolve_model("Qwen/Gated", saved));
}

TEST_F(Hub, MissingRepoOrRevisionIs404) {
  std::string msg = error_of([&] { resolve_model("Qwen/Nope", opts_); });
  EXPECT_NE(msg.find("no model repo Qwen/Nope"), std::string::npos) << msg;
  EXPECT_NE(msg.find("HTTP 404"), std::string::npos) << msg;
  opts_.revision = "v9";
  msg = error_of([&] { resolve_model("Qwen/Tiny-VL", opts_); });
  EXPECT_NE(msg.find("no revision 'v9' in Qwen/Tiny-VL"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(repo_dir("Qwen/Nope") + "/refs"));
}

TEST_F(Hub, ServerErrorsAreRetriedThenReported) {
  hub_.fail_next(2, 500);
  expect_same_as_fixture(resolve_model("Qwen/Tiny-VL", opts_));
  EXPECT_EQ(hub_.count("GET", "/api/models/Qwen/Tiny-VL/revision/main"), 3u);  // 500, 500, 200

  TempDir other;
  opts_.cache_dir = other / "hub";
  opts_.max_retries = 2;
  hub_.fail_next(100, 503);
  std::string msg = error_of([&] { resolve_model("Qwen/Tiny-VL", opts_); });
  EXPECT_NE(msg.find("failed with HTTP 503"), std::string::npos) << msg;
  EXPECT_NE(msg.find("after 3 attempts"), std::string::npos) << msg;
  EXPECT_NE(msg.find("try again later"), std::string::npos) << msg;
  hub_.fail_next(0, 500);
}

TEST_F(Hub, ServerGoneSaysWhatToTry) {
  std::string url = hub_.url();
  hub_.stop();
  std::string msg = error_of([&] { resolve_model("Qwen/Tiny-VL", opts_); });
  EXPECT_NE(msg.find("cannot reach " + url), std::string::npos) << msg;
  for (const char* hint : {"HF_ENDPOINT", "--source modelscope", "local folder"})
    EXPECT_NE(msg.find(hint), std::string::npos) << hint << " not in: " << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST_F(Hub, NotEnoughDiskSpaceIsCaughtBeforeDownloading) {
  std::string msg = error_of([&] { resolve_model("Qwen/Huge", opts_); });
  EXPECT_NE(msg.find("not enough disk space"), std::string::npos) << msg;
  uint64_t need = uint64_t(1) << 60;  // the weights as the hub claims them, plus the small files
  for (const char* name : {"config.json", "generation_config.json", "preprocessor_config.json", "chat_template.json",
                           "tokenizer_config.json", "tokenizer.json"})
    need += fixture_files().at(name)->bytes.size();
  EXPECT_NE(msg.find(std::to_string(need) + " bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("are free"), std::string::npos) << msg;
  EXPECT_EQ(hub_.count("GET", "/cdn/"), 0u);
}

TEST_F(Hub, ShardedWeightsFollowTheIndex) {
  hub_.add_repo("Qwen/Sharded", sharded_repo());
  std::string dir = resolve_model("Qwen/Sharded", opts_);
  EXPECT_TRUE(hub::missing_files(dir).empty());
  EXPECT_EQ(slurp(dir + "/model-00001-of-00002.safetensors") + slurp(dir + "/model-00002-of-00002.safetensors"),
            fixture_files().at("model.safetensors")->bytes);
}

TEST_F(Hub, RenamedRepoFollowsRelativeRedirects) {
  std::string dir = resolve_model("Old/Tiny", opts_);
  EXPECT_EQ(dir, repo_dir("Old/Tiny") + "/snapshots/" + kCommit);  // cached under the name the user gave
  expect_same_as_fixture(dir);
  EXPECT_GT(hub_.count("HEAD", "/Old/Tiny/resolve/"), 0u);
  EXPECT_GT(hub_.count("HEAD", "/Qwen/Tiny-VL/resolve/"), 0u);
}

TEST_F(Hub, ConcurrentDownloadsOfOneModelFetchEachFileOnce) {
  std::string a, b;
  std::thread t1([&] { a = resolve_model("Qwen/Tiny-VL", opts_); });
  std::thread t2([&] { b = resolve_model("Qwen/Tiny-VL", opts_); });
  t1.join();
  t2.join();
  EXPECT_EQ(a, b);
  expect_same_as_fixture(a);
  EXPECT_EQ(hub_.count("GET", "/cdn/"), 2u);
  EXPECT_TRUE(incomplete_files("Qwen/Tiny-VL").empty());
}

TEST_F(Hub, PullRefreshesTheRevisionAndFetchesOnlyWhatChanged) {
  std::string first = pull_model("Qwen/Tiny-VL", opts_);
  hub_.clear_log();
  EXPECT_EQ(pull_model("Qwen/Tiny-VL", opts_), first);  // asks the hub, downloads nothing
  EXPECT_EQ(hub_.count("GET", "/api/models/"), 1u);
  EXPECT_EQ(hub_.count("GET", "/resolve/") + hub_.count("GET", "/cdn/"), 0u);

  hub_.push_new_config("Qwen/Tiny-VL");
  hub_.clear_log();
  EXPECT_EQ(resolve_model("Qwen/Tiny-VL", opts_), first);  // the cache answers first: no network
  EXPECT_TRUE(hub_.log().empty());
  std::string second = pull_model("Qwen/Tiny-VL", opts_);
  EXPECT_EQ(second, repo_dir("Qwen/Tiny-VL") + "/snapshots/" + kCommit2);
  EXPECT_EQ(hub_.count("GET", "/resolve/"), 1u);  // only the changed config.json
  EXPECT_EQ(hub_.count("GET", "/cdn/"), 0u);
  EXPECT_EQ(slurp(repo_dir("Qwen/Tiny-VL") + "/refs/main"), kCommit2);
  EXPECT_EQ(slurp(second + "/config.json"), fixture_files().at("config.json")->bytes + "\n");
  EXPECT_EQ(resolve_model("Qwen/Tiny-VL", opts_), second);
}

TEST_F(Hub, OfflineModeNeverTouchesTheNetwork) {
  opts_.offline = true;
  std::string msg = error_of([&] { resolve_model("Qwen/Tiny-VL", opts_); });
  EXPECT_NE(msg.find("offline"), std::string::npos) << msg;
  EXPECT_NE(msg.find("qvl pull Qwen/Tiny-VL"), std::string::npos) << msg;
  EXPECT_TRUE(hub_.log().empty());
}

TEST_F(Hub, ModelScopeSourceUsesItsRoutesAndTheSameCacheLayout) {
  opts_.source = "modelscope";
  std::string dir = resolve_model("Qwen/Tiny-VL", opts_);
  expect_same_as_fixture(dir);
  EXPECT_GT(hub_.count("GET", "/api/v1/models/Qwen/Tiny-VL/repo/files"), 0u);
  EXPECT_EQ(hub_.count("GET", "/resolve/"), 0u);
  std::string commit = slurp(repo_dir("Qwen/Tiny-VL") + "/refs/master");
  EXPECT_EQ(dir, repo_dir("Qwen/Tiny-VL") + "/snapshots/" + commit);
  EXPECT_TRUE(hub::is_commit_hash(commit));
  // Blobs are named by sha256, as Hugging Face names LFS blobs.
  EXPECT_EQ(fs::read_symlink(dir + "/config.json").string(), "../../blobs/" + fixture_files().at("config.json")->sha256);
  hub_.clear_log();
  EXPECT_EQ(resolve_model("Qwen/Tiny-VL", opts_), dir);
  EXPECT_TRUE(hub_.log().empty());
  std::string msg = error_of([&] { resolve_model("Qwen/Nope", opts_); });
  EXPECT_NE(msg.find("no model Qwen/Nope"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ModelScope"), std::string::npos) << msg;
}

// --- the qvl binary ---------------------------------------------------------

struct QvlRun {
  int code;
  std::string out, err;
};

QvlRun run_qvl(const std::string& env, const std::string& args, const TempDir& tmp) {
  std::string err_path = tmp / "stderr.txt";
  std::string cmd = env + " " + std::string(QVL_BINARY) + " " + args + " 2>" + err_path;
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, slurp(err_path)};
}

TEST_F(Hub, PullAndModelsCommands) {
  std::string env = "HF_HUB_CACHE=" + opts_.cache_dir + " HF_ENDPOINT=" + hub_.url() + " HF_HOME=" + tmp_.path();
  QvlRun pull = run_qvl(env, "pull Qwen/Tiny-VL", tmp_);
  ASSERT_EQ(pull.code, 0) << pull.err;
  EXPECT_EQ(pull.out, repo_dir("Qwen/Tiny-VL") + "/snapshots/" + kCommit + "\n");
  // stderr is not a terminal: plain progress lines.
  EXPECT_NE(pull.err.find("qvl: downloaded model.safetensors  100%"), std::string::npos) << pull.err;
  EXPECT_EQ(pull.err.find('\r'), std::string::npos);

  QvlRun models = run_qvl(env, "models", tmp_);
  ASSERT_EQ(models.code, 0) << models.err;
  EXPECT_NE(models.out.find("Qwen/Tiny-VL"), std::string::npos) << models.out;
  EXPECT_NE(models.out.find("main"), std::string::npos) << models.out;
  EXPECT_NE(models.out.find(kCommit.substr(0, 12)), std::string::npos) << models.out;
  EXPECT_NE(models.out.find("34.0 MB"), std::string::npos) << models.out;
  EXPECT_NE(models.out.find("complete"), std::string::npos) << models.out;

  QvlRun missing = run_qvl(env, "pull Qwen/Nope", tmp_);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("no model repo Qwen/Nope"), std::string::npos) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;

  QvlRun offline = run_qvl(env + " HF_HUB_OFFLINE=1", "pull Qwen/Other", tmp_);
  EXPECT_EQ(offline.code, 1);
  EXPECT_NE(offline.err.find("offline"), std::string::npos) << offline.err;

  EXPECT_EQ(run_qvl(env, "pull", tmp_).code, 2);
  EXPECT_EQ(run_qvl(env, "pull not-a-repo", tmp_).code, 2);
  QvlRun empty = run_qvl("HF_HUB_CACHE=" + (tmp_ / "empty"), "models", tmp_);
  EXPECT_EQ(empty.code, 0);
  EXPECT_NE(empty.out.find("no models"), std::string::npos) << empty.out;
}

}  // namespace
}  // namespace qvl
