// The model hub client without a hub: hashes, repo ids, the Hugging Face cache
// layout (a folder made the way huggingface_hub makes it is found and used
// read-only), offline mode, file selection, progress text, flags. The
// download paths against a mock hub are in tests/cli/hub_cli_test.cpp.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "io/hub_cache.h"
#include "io/hub_fetch.h"
#include "io/hub_files.h"
#include "io/hub_http.h"
#include "io/hub_progress.h"
#include "io/hub_remote.h"
#include "io/hub_sha.h"
#include "io/model_source.h"
#include "io_test_util.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::TempDir;
using test::write_bytes;

const std::string kTiny = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";
const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

// Sets an environment variable for one scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old, had_ = true;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

// Every path under `root` with its type, size and mtime: equal before and
// after means nothing was written (the tests may run as root, where chmod
// alone does not stop writes).
std::map<std::string, std::string> tree_state(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    struct stat st;
    lstat(e.path().c_str(), &st);
    out[e.path().string()] = std::to_string(st.st_mode) + ":" + std::to_string(st.st_size) + ":" +
                             std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }
  return out;
}

void chmod_tree(const std::string& root, bool writable) {
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (!e.is_symlink()) fs::permissions(e.path(), fs::perms::owner_write, writable ? fs::perm_options::add : fs::perm_options::remove);
  fs::permissions(root, fs::perms::owner_write, writable ? fs::perm_options::add : fs::perm_options::remove);
}

// The etag the hub gives a fixture file; hashed once per test run.
std::string fixture_etag(const std::string& path, bool lfs) {
  static std::map<std::string, std::string> known;
  auto it = known.find(path);
  if (it != known.end()) return it->second;
  return known[path] = lfs ? hub::sha256_file(path) : hub::git_blob_sha1_file(path);
}

// Lays out the fixture model as huggingface_hub does: blobs named by sha256
// (LFS files) or git blob sha1 (small files), relative symlinks, refs/main.
std::string make_hf_cache(const std::string& cache, const std::string& repo) {
  std::string root = cache + "/" + hub::repo_folder_name(repo);
  fs::create_directories(root + "/blobs");
  fs::create_directories(root + "/snapshots/" + kCommit);
  fs::create_directories(root + "/refs");
  for (const auto& e : fs::directory_iterator(kTiny)) {
    std::string name = e.path().filename().string();
    std::string etag = fixture_etag(e.path().string(), e.file_size() > 1000000);
    fs::copy_file(e.path(), root + "/blobs/" + etag);
    fs::create_symlink("../../blobs/" + etag, root + "/snapshots/" + kCommit + "/" + name);
  }
  write_bytes(root + "/refs/main", kCommit);
  return root + "/snapshots/" + kCommit;
}

TEST(HubSha, KnownVectors) {
  auto sha256 = [](const std::string& s) {
    hub::Sha256 h;
    h.update(s.data(), s.size());
    return h.hex();
  };
  EXPECT_EQ(sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a' fed in uneven pieces exercises the block buffering.
  hub::Sha256 big;
  std::string chunk(997, 'a');
  size_t left = 1000000;
  while (left) {
    size_t n = std::min(left, chunk.size());
    big.update(chunk.data(), n);
    left -= n;
  }
  EXPECT_EQ(big.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  hub::Sha1 s1;
  s1.update("abc", 3);
  EXPECT_EQ(s1.hex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
  // `printf 'hello\n' | git hash-object --stdin`
  hub::Sha1 blob = hub::git_blob_hasher(6);
  blob.update("hello\n", 6);
  EXPECT_EQ(blob.hex(), "ce013625030ba8dba906f756967f9e9ca394464a");
}

TEST(HubSha, FilesAndHex) {
  TempDir dir;
  write_bytes(dir / "f", "hello\n");
  EXPECT_EQ(hub::git_blob_sha1_file(dir / "f"), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(hub::sha256_file(dir / "f"), "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  expect_error([&] { hub::sha256_file(dir / "absent"); }, {"absent"});
  EXPECT_TRUE(hub::is_hex(kCommit, 40));
  EXPECT_FALSE(hub::is_hex(kCommit, 64));
  EXPECT_FALSE(hub::is_hex("0123456789abcdef0123456789abcdef0123456g", 40));
}

TEST(HubCache, RepoIds) {
  for (const char* ok : {"Qwen/Qwen3-VL-2B-Instruct", "a/b", "Org_1/name.v2"}) EXPECT_TRUE(hub::is_repo_id(ok)) << ok;
  for (const char* bad : {"", "Qwen", "/abs/path", "a/b/c", "../x", "a/..", "a--b/c", "a/b--c", "a/ b", "./x", "a/.b",
                          "a/b-", "a/b\\c"})
    EXPECT_FALSE(hub::is_repo_id(bad)) << bad;
  EXPECT_EQ(hub::repo_folder_name("Qwen/Qwen3-VL-2B-Instruct"), "models--Qwen--Qwen3-VL-2B-Instruct");
  EXPECT_EQ(hub::repo_id_from_folder("models--Qwen--Qwen3-VL-2B-Instruct"), "Qwen/Qwen3-VL-2B-Instruct");
  EXPECT_EQ(hub::repo_id_from_folder("datasets--a--b"), "");
  EXPECT_TRUE(hub::is_commit_hash(kCommit));
  EXPECT_FALSE(hub::is_commit_hash("main"));
}

TEST(HubCache, CacheDirFollowsTheEnvironmentLikeHuggingfaceHub) {
  ScopedEnv a("HF_HUB_CACHE", nullptr), b("HUGGINGFACE_HUB_CACHE", nullptr), c("HF_HOME", nullptr),
      d("XDG_CACHE_HOME", nullptr), e("HOME", "/home/u");
  EXPECT_EQ(hub::default_cache_dir(), "/home/u/.cache/huggingface/hub");
  {
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(hub::default_cache_dir(), "/xdg/huggingface/hub");
    ScopedEnv h("HF_HOME", "~/hf");
    EXPECT_EQ(hub::default_cache_dir(), "/home/u/hf/hub");
    ScopedEnv l("HUGGINGFACE_HUB_CACHE", "/legacy");
    EXPECT_EQ(hub::default_cache_dir(), "/legacy");
    ScopedEnv n("HF_HUB_CACHE", "/new");
    EXPECT_EQ(hub::default_cache_dir(), "/new");
  }
}

TEST(HubFiles, SelectsOnlyWhatQvlReads) {
  std::vector<std::string> listing = {".gitattributes", "README.md", "config.json", "model.safetensors",
                                      "pytorch_model.bin", "tokenizer.json", "tokenizer_config.json",
                                      "chat_template.json", "preprocessor_config.json", "merges.txt",
                                      "generation_config.json", "vocab.json", "onnx/model.onnx"};
  std::vector<std::string> want = {"config.json", "generation_config.json", "preprocessor_config.json",
                                   "chat_template.json", "tokenizer_config.json", "tokenizer.json",
                                   "model.safetensors"};
  EXPECT_EQ(hub::select_files(listing), want);
  // With an index the single-file weights are not fetched; the index comes before any shard.
  std::vector<std::string> sharded = {"model.safetensors", "model.safetensors.index.json", "config.json",
                                      "model-00001-of-00002.safetensors", "tokenizer.json", "chat_template.jinja"};
  EXPECT_EQ(hub::select_files(sharded),
            (std::vector<std::string>{"config.json", "chat_template.jinja", "tokenizer.json", "model.safetensors.index.json"}));
  // The retrieval repos' scripts say what the folder is (io/model_task.h); their other scripts are not read.
  std::vector<std::string> embedding = {"config.json", "scripts/qwen3_vl_embedding.py", "scripts/other.py",
                                        "model.safetensors"};
  EXPECT_EQ(hub::select_files(embedding),
            (std::vector<std::string>{"config.json", "scripts/qwen3_vl_embedding.py", "model.safetensors"}));
}

TEST(HubFiles, IndexShards) {
  std::string index = R"({"metadata": {"total_size": 10}, "weight_map": {
      "a": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
      "c": "model-00001-of-00002.safetensors"}})";
  EXPECT_EQ(hub::index_shards(index, "idx"),
            (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
  expect_error([] { hub::index_shards(R"({"weight_map": {"a": "../../etc/passwd"}})", "idx.json"); },
               {"idx.json", "unsafe path", "../../etc/passwd"});
  expect_error([] { hub::index_shards(R"({"weight_map": {"a": "/abs"}})", "idx.json"); }, {"unsafe"});
  expect_error([] { hub::index_shards("{", "idx.json"); }, {"idx.json", "JSON"});
  expect_error([] { hub::index_shards(R"({"metadata": {}})", "idx.json"); }, {"weight_map"});
  EXPECT_TRUE(hub::is_safe_relative_path("sub/dir/file.json"));
  for (const char* bad : {"", "/a", "a/../b", "a//b", "a\\b", "..", "a/."}) EXPECT_FALSE(hub::is_safe_relative_path(bad)) << bad;
}

TEST(HubCache, LinksAreRelativeAndRefsAtomic) {
  TempDir tmp;
  hub::RepoCache rc(tmp.path(), "Org/Name");
  fs::create_directories(rc.root() + "/blobs");
  write_bytes(rc.blob_path("abc"), "x");
  rc.link(kCommit, "config.json", "abc");
  rc.link(kCommit, "sub/nested.json", "abc");
  rc.link(kCommit, "config.json", "abc");  // idempotent
  EXPECT_EQ(fs::read_symlink(rc.snapshot_dir(kCommit) + "/config.json"), "../../blobs/abc");
  EXPECT_EQ(fs::read_symlink(rc.snapshot_dir(kCommit) + "/sub/nested.json"), "../../../blobs/abc");
  EXPECT_FALSE(rc.commit_for("main").has_value());
  rc.write_ref("main", kCommit);
  rc.write_ref("refs/pr/1", kCommit);
  EXPECT_EQ(rc.commit_for("main"), kCommit);
  EXPECT_EQ(rc.commit_for("refs/pr/1"), kCommit);
  EXPECT_EQ(rc.commit_for(kCommit), kCommit);  // a commit with a snapshot names itself
  EXPECT_EQ(rc.snapshot_for("main"), rc.snapshot_dir(kCommit));
  EXPECT_FALSE(rc.commit_for("../../etc").has_value());
  EXPECT_EQ(rc.lock_path("abc"), tmp.path() + "/.locks/models--Org--Name/abc.lock");
  for (const auto& e : fs::directory_iterator(rc.root() + "/refs")) EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos);
}

TEST(HubCache, MissingFilesFollowsTheIndexAndSymlinks) {
  TempDir tmp;
  std::string d = tmp.path();
  EXPECT_EQ(hub::missing_files(d), (std::vector<std::string>{"config.json", "tokenizer.json", "model.safetensors"}));
  write_bytes(d + "/config.json", "{}");
  write_bytes(d + "/tokenizer.json", "{}");
  write_bytes(d + "/model.safetensors.index.json",
              R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
  write_bytes(d + "/model-00001-of-00002.safetensors", "x");
  fs::create_symlink("../../blobs/gone", d + "/model-00002-of-00002.safetensors");  // dangling: still missing
  EXPECT_EQ(hub::missing_files(d), (std::vector<std::string>{"model-00002-of-00002.safetensors"}));
  fs::remove(d + "/model-00002-of-00002.safetensors");
  write_bytes(d + "/model-00002-of-00002.safetensors", "y");
  EXPECT_TRUE(hub::missing_files(d).empty());
}

TEST(ModelSource, HuggingfaceHubFolderIsFoundAndUsedReadOnly) {
  TempDir tmp;
  std::string cache = tmp / "hub";
  std::string snap = make_hf_cache(cache, "Qwen/Tiny-VL");
  chmod_tree(cache, false);
  auto before = tree_state(cache);
  ModelSourceOptions o;
  o.cache_dir = cache;
  o.endpoint = "http://127.0.0.1:9";  // discard port: any network use would fail loudly
  o.max_retries = 0;
  EXPECT_EQ(resolve_model("Qwen/Tiny-VL", o), snap);
  o.revision = kCommit;
  EXPECT_EQ(resolve_model("Qwen/Tiny-VL", o), snap);
  o.revision = "main";
  o.offline = true;
  EXPECT_EQ(resolve_model("Qwen/Tiny-VL", o), snap);
  {
    ScopedEnv cache_env("HF_HUB_CACHE", cache.c_str());  // found through the environment too
    ModelSourceOptions env_only;
    env_only.offline = true;
    EXPECT_EQ(resolve_model("Qwen/Tiny-VL", env_only), snap);
  }
  EXPECT_EQ(tree_state(cache), before);
  // The snapshot's files read through the symlinks.
  EXPECT_EQ(hub::sha256_file(snap + "/model.safetensors"), hub::sha256_file(kTiny + "/model.safetensors"));
  chmod_tree(cache, true);
}

TEST(ModelSource, OfflineNeverTouchesTheNetworkAndSaysWhatToDo) {
  TempDir tmp;
  ModelSourceOptions o;
  o.cache_dir = tmp / "hub";
  o.offline = true;
  o.endpoint = "http://127.0.0.1:9";
  expect_error([&] { resolve_model("Qwen/Absent", o); },
               {"offline", "Qwen/Absent", "not in the cache", tmp / "hub", "qvl pull Qwen/Absent", "local folder"});
  // A cached but incomplete snapshot names what is missing.
  std::string snap = make_hf_cache(tmp / "hub", "Qwen/Tiny-VL");
  fs::remove(snap + "/model.safetensors");
  expect_error([&] { resolve_model("Qwen/Tiny-VL", o); }, {"offline", "lacks model.safetensors", "qvl pull"});
  EXPECT_FALSE(fs::exists(tmp / "hub/.locks"));
}

TEST(ModelSource, LocalFoldersAndBadArguments) {
  ModelSourceOptions o;
  o.offline = true;
  EXPECT_EQ(resolve_model(kTiny, o), kTiny);
  expect_error([&] { resolve_model(kTiny + "/config.json", o); }, {"is a file", "config.json"});
  expect_error([&] { resolve_model("/no/such/folder", o); }, {"/no/such/folder", "no such folder"});
  expect_error([&] { resolve_model("justaname", o); }, {"justaname", "repo id"});
  EXPECT_THROW(resolve_model("", o), UsageError);
  o.source = "pypi";
  o.offline = false;
  EXPECT_THROW(resolve_model("Org/Name", o), UsageError);
}

TEST(HubCache, ScanListsModelsWithSizesAndCompleteness) {
  TempDir tmp;
  std::string cache = tmp / "hub";
  std::string snap = make_hf_cache(cache, "Qwen/Tiny-VL");
  std::string other = make_hf_cache(cache, "Org/Partial");
  fs::remove(other + "/tokenizer.json");
  write_bytes(cache + "/models--Org--Partial/blobs/" + std::string(64, 'a') + ".incomplete", std::string(100, 'x'));
  fs::create_directories(cache + "/datasets--x--y");  // not a model: ignored
  std::vector<hub::CachedModel> models = hub::scan_cache(cache);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].repo_id, "Org/Partial");
  EXPECT_EQ(models[0].bytes_incomplete, 100u);
  ASSERT_EQ(models[0].revisions.size(), 1u);
  EXPECT_FALSE(models[0].revisions[0].complete);
  EXPECT_EQ(models[0].revisions[0].missing, std::vector<std::string>{"tokenizer.json"});
  EXPECT_EQ(models[1].repo_id, "Qwen/Tiny-VL");
  uint64_t fixture_bytes = 0;
  for (const auto& e : fs::directory_iterator(kTiny)) fixture_bytes += e.file_size();
  EXPECT_EQ(models[1].bytes_on_disk, fixture_bytes);
  ASSERT_EQ(models[1].revisions.size(), 1u);
  EXPECT_EQ(models[1].revisions[0].revision, "main");
  EXPECT_EQ(models[1].revisions[0].commit, kCommit);
  EXPECT_TRUE(models[1].revisions[0].complete);
  EXPECT_TRUE(hub::scan_cache(tmp / "absent").empty());
}

TEST(HubProgress, Text) {
  EXPECT_EQ(hub::format_bytes(512), "512 B");
  EXPECT_EQ(hub::format_bytes(22547080), "22.5 MB");
  EXPECT_EQ(hub::format_bytes(4260000000ull), "4.26 GB");
  EXPECT_EQ(hub::format_duration(7), "0:07");
  EXPECT_EQ(hub::format_duration(725), "12:05");
  EXPECT_EQ(hub::format_duration(3723), "1:02:03");
  EXPECT_EQ(hub::progress_line("m", 50, 100, 10, 10), "m   50% [#####     ] 50 B / 100 B  10 B/s  ETA 0:05");
  EXPECT_EQ(hub::progress_line("m", 5, 0, 0, 10), "m  5 B");
  std::ostringstream out;
  hub::FileProgress p(&out, false, 0, "config.json", 100, 0);
  p.update(40);
  p.finish();
  EXPECT_NE(out.str().find("qvl: downloading config.json   40%"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("qvl: downloaded config.json  100%"), std::string::npos) << out.str();
  std::ostringstream bar;
  hub::FileProgress tty(&bar, true, 5, "w", 10, 0);
  tty.finish();
  EXPECT_EQ(bar.str().rfind("\rw  100% [", 0), 0u) << bar.str();
}

TEST(HubHttp, RefusedConnectionIsANetworkErrorQuickly) {
  hub::HttpSettings s;
  s.max_retries = 3;
  s.retry_base_ms = 1;
  int notes = 0;
  s.note = [&](const std::string&) { ++notes; };
  hub::HttpClient http(s);
  EXPECT_THROW(http.get("http://127.0.0.1:9/api/models/a/b/revision/main"), hub::NetworkError);
  EXPECT_EQ(notes, 2);  // connection failures are retried at most twice
  EXPECT_EQ(hub::url_origin("http://127.0.0.1:8080/a/b?c"), "http://127.0.0.1:8080");
  EXPECT_EQ(hub::url_encode("refs/pr/1", false), "refs%2Fpr%2F1");
  EXPECT_EQ(hub::url_encode("a b/c.json", true), "a%20b/c.json");
  EXPECT_EQ(hub::normalize_etag("W/\"abc\""), "abc");
  EXPECT_EQ(hub::normalize_etag("\"abc\""), "abc");
}

TEST(ModelSource, UnreachableHubSuggestsAlternatives) {
  TempDir tmp;
  ModelSourceOptions o;
  o.cache_dir = tmp / "hub";
  o.endpoint = "http://127.0.0.1:9";
  o.retry_base_ms = 1;
  o.progress = false;
  ScopedEnv home("HF_HOME", tmp.path().c_str());  // no saved token from the real home
  expect_error([&] { resolve_model("Qwen/Tiny-VL", o); },
               {"cannot reach http://127.0.0.1:9", "Qwen/Tiny-VL", "HF_ENDPOINT", "--source modelscope", "local folder"});
  o.source = "modelscope";
  expect_error([&] { resolve_model("Qwen/Tiny-VL", o); }, {"cannot reach", "MODELSCOPE_ENDPOINT", "local folder"});
}

TEST(HubFetch, FreeBytes) {
  TempDir tmp;
  EXPECT_GT(hub::free_bytes(tmp.path()), 0u);
  expect_error([&] { hub::free_bytes(tmp / "absent"); }, {"absent"});
}

}  // namespace
}  // namespace qvl
