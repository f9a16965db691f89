#include "io/hub_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "io/hub_files.h"
#include "io/hub_sha.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace fs = std::filesystem;

namespace qvl::hub {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// "~/x" -> "$HOME/x", as Python's os.path.expanduser does for these variables.
std::string expand_user(const std::string& p) {
  if (p.rfind("~/", 0) == 0 || p == "~") return env("HOME") + p.substr(1);
  return p;
}

bool exists_following_links(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);  // follows symlinks: a dangling one is false
}

// A temp-file suffix no other writer (process or thread) uses at the same time.
std::string unique_suffix() {
  return ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
}

// Writes `text` to `path` via a temp file and rename(2), so readers see either
// the old content or the new one.
void write_atomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += unique_suffix();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) fail("cannot write ", tmp.string(), ": ", std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(tmp, ec);
    fail("cannot write ", path.string(), ": ", why);
  }
}

uint64_t regular_file_bytes(const fs::directory_entry& e) {
  std::error_code ec;
  if (!e.is_regular_file(ec) || e.is_symlink(ec)) return 0;
  uint64_t n = e.file_size(ec);
  return ec ? 0 : n;
}

}  // namespace

std::string default_cache_dir() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (std::string v = env(name); !v.empty()) return expand_user(v);
  if (std::string home = env("HF_HOME"); !home.empty()) return expand_user(home) + "/hub";
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return expand_user(xdg) + "/huggingface/hub";
  std::string home = env("HOME");
  if (home.empty()) fail("cannot find the Hugging Face cache: HOME is not set (set HF_HUB_CACHE)");
  return home + "/.cache/huggingface/hub";
}

bool is_commit_hash(const std::string& s) { return is_hex(s, 40); }

bool is_repo_id(const std::string& s) {
  size_t slash = s.find('/');
  if (slash == std::string::npos || s.find('/', slash + 1) != std::string::npos) return false;
  for (const std::string& part : {s.substr(0, slash), s.substr(slash + 1)}) {
    if (part.empty() || part.size() > 96 || part == "." || part == "..") return false;
    if (part.find("--") != std::string::npos || part.find("..") != std::string::npos) return false;
    if (part.front() == '-' || part.front() == '.' || part.back() == '-' || part.back() == '.') return false;
    for (char c : part)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::string repo_folder_name(const std::string& repo_id) {
  std::string out = "models--";
  for (char c : repo_id) out += c == '/' ? std::string("--") : std::string(1, c);
  return out;
}

std::string repo_id_from_folder(const std::string& folder) {
  const std::string prefix = "models--";
  if (folder.rfind(prefix, 0) != 0) return "";
  std::string rest = folder.substr(prefix.size());
  size_t sep = rest.find("--");
  if (sep == std::string::npos) return rest;  // a repo without an org ("gpt2")
  return rest.substr(0, sep) + "/" + rest.substr(sep + 2);
}

std::vector<std::string> missing_files(const std::string& snapshot_dir) {
  fs::path dir(snapshot_dir);
  std::vector<std::string> missing;
  for (const char* name : {"config.json", "tokenizer.json"})
    if (!exists_following_links(dir / name)) missing.push_back(name);
  if (exists_following_links(dir / kIndexFile)) {
    std::string index = (dir / kIndexFile).string();
    for (const std::string& shard : index_shards(read_file(index), index))
      if (!exists_following_links(dir / shard)) missing.push_back(shard);
  } else if (!exists_following_links(dir / kWeightsFile)) {
    missing.push_back(kWeightsFile);
  }
  return missing;
}

RepoCache::RepoCache(std::string cache_dir, const std::string& repo_id)
    : cache_dir_(std::move(cache_dir)), root_(cache_dir_ + "/" + repo_folder_name(repo_id)) {}

std::string RepoCache::blob_path(const std::string& etag) const { return root_ + "/blobs/" + etag; }
std::string RepoCache::incomplete_path(const std::string& etag) const { return blob_path(etag) + ".incomplete"; }
std::string RepoCache::lock_path(const std::string& etag) const {
  return cache_dir_ + "/.locks/" + fs::path(root_).filename().string() + "/" + etag + ".lock";
}
std::string RepoCache::snapshot_dir(const std::string& commit) const { return root_ + "/snapshots/" + commit; }

std::optional<std::string> RepoCache::commit_for(const std::string& revision) const {
  if (is_commit_hash(revision) && fs::is_directory(snapshot_dir(revision))) return revision;
  if (!is_safe_relative_path(revision)) return std::nullopt;  // refs/pr/1 is fine, "../x" is not
  fs::path ref = fs::path(root_) / "refs" / revision;
  std::error_code ec;
  if (!fs::is_regular_file(ref, ec)) return std::nullopt;
  std::string commit = read_file(ref.string());
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  if (!is_safe_relative_path(commit)) return std::nullopt;
  return commit;
}

std::optional<std::string> RepoCache::snapshot_for(const std::string& revision) const {
  std::optional<std::string> commit = commit_for(revision);
  if (!commit) return std::nullopt;
  std::string dir = snapshot_dir(*commit);
  if (!fs::is_directory(dir)) return std::nullopt;
  return dir;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  if (!is_safe_relative_path(revision)) fail("refusing to write ref '", revision, "': not a safe name");
  fs::path ref = fs::path(root_) / "refs" / revision;
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  if (ec) fail("cannot create ", ref.parent_path().string(), ": ", ec.message());
  if (commit_for(revision) == commit) return;
  write_atomically(ref, commit);
}

void RepoCache::link(const std::string& commit, const std::string& file, const std::string& etag) const {
  fs::path pointer = fs::path(snapshot_dir(commit)) / file;
  std::error_code ec;
  fs::create_directories(pointer.parent_path(), ec);
  if (ec) fail("cannot create ", pointer.parent_path().string(), ": ", ec.message());
  // Relative, as huggingface_hub makes it, so the cache folder can be moved.
  fs::path target = fs::path(blob_path(etag)).lexically_relative(pointer.parent_path());
  if (fs::is_symlink(pointer, ec) && fs::read_symlink(pointer, ec) == target) return;
  fs::path tmp = pointer;
  tmp += unique_suffix();
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (ec) fail("cannot create symlink ", pointer.string(), ": ", ec.message());
  fs::rename(tmp, pointer, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(tmp, ec);
    fail("cannot create symlink ", pointer.string(), ": ", why);
  }
}

std::vector<CachedModel> scan_cache(const std::string& cache_dir) {
  std::vector<CachedModel> models;
  std::error_code ec;
  if (!fs::is_directory(cache_dir, ec)) return models;
  for (const auto& repo : fs::directory_iterator(cache_dir, ec)) {
    std::string folder = repo.path().filename().string();
    std::string repo_id = repo_id_from_folder(folder);
    if (repo_id.empty() || !repo.is_directory(ec)) continue;
    CachedModel m;
    m.repo_id = repo_id;
    m.folder = repo.path().string();
    for (const auto& blob : fs::directory_iterator(repo.path() / "blobs", ec)) {
      uint64_t n = regular_file_bytes(blob);
      if (blob.path().extension() == ".incomplete") m.bytes_incomplete += n;
      else m.bytes_on_disk += n;
    }
    std::set<std::string> named;
    fs::path refs = repo.path() / "refs";
    if (fs::is_directory(refs, ec)) {
      for (const auto& ref : fs::recursive_directory_iterator(refs, ec)) {
        if (!ref.is_regular_file(ec)) continue;
        std::string revision = ref.path().lexically_relative(refs).string();
        RepoCache rc(cache_dir, repo_id);
        CachedRevision r;
        r.revision = revision;
        r.commit = rc.commit_for(revision).value_or("");
        named.insert(r.commit);
        m.revisions.push_back(r);
      }
    }
    for (const auto& snap : fs::directory_iterator(repo.path() / "snapshots", ec))
      if (!named.count(snap.path().filename().string()))
        m.revisions.push_back({"", snap.path().filename().string()});
    for (CachedRevision& r : m.revisions) {
      fs::path dir = repo.path() / "snapshots" / r.commit;
      if (r.commit.empty() || !fs::is_directory(dir, ec)) {
        r.missing = {"snapshot folder"};
        continue;
      }
      try {
        r.missing = missing_files(dir.string());
      } catch (const Error& e) {
        r.missing = {e.what()};
      }
      r.complete = r.missing.empty();
    }
    std::sort(m.revisions.begin(), m.revisions.end(),
              [](const CachedRevision& a, const CachedRevision& b) { return a.revision < b.revision; });
    models.push_back(std::move(m));
  }
  std::sort(models.begin(), models.end(),
            [](const CachedModel& a, const CachedModel& b) { return a.repo_id < b.repo_id; });
  return models;
}

}  // namespace qvl::hub
