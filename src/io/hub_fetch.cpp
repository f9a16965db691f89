#include "io/hub_fetch.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/hub_files.h"
#include "io/hub_progress.h"
#include "io/hub_sha.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace fs = std::filesystem;

namespace qvl::hub {
namespace {

// An exclusive flock(2) on <cache>/.locks/.../<etag>.lock, the lock Python's
// filelock takes, so qvl and huggingface_hub never write one blob together.
class BlobLock {
 public:
  BlobLock(const std::string& path, const std::string& file, std::ostream* log) {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create lock file ", path, ": ", std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    if (log) *log << "qvl: waiting for another process downloading " << file << " (lock " << path << ")\n";
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) fail("cannot lock ", path, ": ", std::strerror(errno));
  }
  ~BlobLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

uint64_t size_or_zero(const std::string& path) {
  std::error_code ec;
  uint64_t n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

void fsync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open ", path, ": ", std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) fail("cannot flush ", path, " to disk: ", std::strerror(err));
}

// Checks the finished download against the hub's size and etag; a mismatch
// removes the file so the next run starts clean.
void verify(const RemoteFile& f, const std::string& incomplete, const std::string& endpoint) {
  uint64_t have = size_or_zero(incomplete);
  auto reject = [&](const std::string& why) {
    std::error_code ec;
    fs::remove(incomplete, ec);
    fail("checksum mismatch for ", f.path, " from ", endpoint, ": ", why,
         "; the damaged download was removed, re-run to download it again");
  };
  if (f.size > 0 && have != f.size) reject(cat("expected ", f.size, " bytes, got ", have));
  if (is_hex(f.etag, 64)) {
    std::string got = sha256_file(incomplete);
    if (got != f.etag) reject(cat("expected sha256 ", f.etag, ", got ", got));
  } else if (is_hex(f.etag, 40)) {
    std::string got = git_blob_sha1_file(incomplete);
    if (got != f.etag) reject(cat("expected git blob id ", f.etag, ", got ", got));
  }
}

class Fetcher {
 public:
  Fetcher(Remote& remote, HttpClient& http, const RepoCache& cache, const FetchOptions& opts)
      : remote_(remote), http_(http), cache_(cache), opts_(opts) {}

  std::string run() {
    RemoteListing listing = remote_.list(opts_.revision);
    std::string blobs = cache_.root() + "/blobs";
    std::error_code ec;
    fs::create_directories(blobs, ec);
    if (ec) fail("cannot create ", blobs, ": ", ec.message(), "; set HF_HUB_CACHE to a writable folder");
    std::vector<std::string> files = select_files(listing.files);
    require(files, "config.json");
    require(files, "tokenizer.json");
    if (std::find(files.begin(), files.end(), kIndexFile) == files.end()) require(files, kWeightsFile);

    std::vector<RemoteFile> plan;
    for (const std::string& name : files) {
      plan.push_back(remote_.describe(listing, name));
      if (name != kIndexFile) continue;
      // The index names the shards: fetch it first (it is small).
      ensure(plan.back(), listing.commit);
      std::string index_path = cache_.blob_path(plan.back().etag);
      for (const std::string& shard : index_shards(read_file(index_path), opts_.repo_id + "/" + kIndexFile)) {
        if (std::find(listing.files.begin(), listing.files.end(), shard) == listing.files.end())
          fail(opts_.repo_id, "/", kIndexFile, " names the shard ", shard, ", which the repo does not have");
        plan.push_back(remote_.describe(listing, shard));
      }
    }
    uint64_t todo = bytes_to_fetch(plan);
    check_space(todo);
    if (opts_.log) {
      *opts_.log << "qvl: " << opts_.repo_id << " revision " << opts_.revision << " (commit "
                 << listing.commit.substr(0, 12) << ") from " << remote_.endpoint() << ": " << plan.size()
                 << " files, " << format_bytes(todo) << " to download\n";
    }
    for (const RemoteFile& f : plan) ensure(f, listing.commit);
    cache_.write_ref(opts_.revision, listing.commit);
    std::string dir = cache_.snapshot_dir(listing.commit);
    if (std::vector<std::string> missing = missing_files(dir); !missing.empty())
      fail("downloaded ", opts_.repo_id, " but ", dir, " still lacks ", missing.front());
    return dir;
  }

 private:
  void require(const std::vector<std::string>& files, const std::string& name) const {
    if (std::find(files.begin(), files.end(), name) == files.end())
      fail(opts_.repo_id, " (revision ", opts_.revision, ") on ", remote_.endpoint(), " has no ", name,
           ": qvl runs Hugging Face-format checkpoints with safetensors weights and tokenizer.json");
  }

  // What is not in blobs/ yet, minus what partial downloads already hold.
  uint64_t bytes_to_fetch(const std::vector<RemoteFile>& plan) const {
    uint64_t need = 0;
    for (const RemoteFile& f : plan)
      if (!fs::exists(cache_.blob_path(f.etag)))
        need += f.size - std::min(f.size, size_or_zero(cache_.incomplete_path(f.etag)));
    return need;
  }

  void check_space(uint64_t need) const {
    std::string blobs = cache_.root() + "/blobs";
    uint64_t avail = free_bytes(blobs);
    if (need > avail)
      throw DiskFullError(cat("not enough disk space for ", opts_.repo_id, ": the download needs ", format_bytes(need),
                              " (", need, " bytes) in ", blobs, " but only ", format_bytes(avail), " (", avail,
                              " bytes) are free; free some space or set HF_HUB_CACHE to a larger disk"));
  }

  // Makes blobs/<etag> hold the file and links it into the snapshot.
  void ensure(const RemoteFile& f, const std::string& commit) {
    if (!fs::exists(cache_.blob_path(f.etag))) {
      BlobLock lock(cache_.lock_path(f.etag), f.path, opts_.log);
      if (!fs::exists(cache_.blob_path(f.etag))) download(f);  // another process may have finished it
    }
    cache_.link(commit, f.path, f.etag);
  }

  void download(const RemoteFile& f) {
    std::string incomplete = cache_.incomplete_path(f.etag);
    uint64_t resumed = size_or_zero(incomplete);
    if (opts_.log && resumed > 0 && resumed < f.size)
      *opts_.log << "qvl: resuming " << f.path << " at byte " << resumed << "\n";
    FileProgress progress(opts_.log, opts_.tty, opts_.line_interval_s, f.path, f.size, resumed);
    HttpResponse r = http_.download(f.url, incomplete, f.size, [&](uint64_t done) { progress.update(done); });
    if (r.status != 200 && r.status != 206) remote_.fail_http(r, cat("downloading ", f.path));
    progress.finish();
    verify(f, incomplete, remote_.endpoint());
    fsync_file(incomplete);
    std::error_code ec;
    fs::rename(incomplete, cache_.blob_path(f.etag), ec);
    if (ec) fail("cannot move ", incomplete, " into place: ", ec.message());
  }

  Remote& remote_;
  HttpClient& http_;
  const RepoCache& cache_;
  const FetchOptions& opts_;
};

}  // namespace

uint64_t free_bytes(const std::string& dir) {
  struct statvfs st;
  if (::statvfs(dir.c_str(), &st) != 0) fail("cannot check free space in ", dir, ": ", std::strerror(errno));
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

std::string fetch_snapshot(Remote& remote, HttpClient& http, const RepoCache& cache, const FetchOptions& opts) {
  return Fetcher(remote, http, cache, opts).run();
}

}  // namespace qvl::hub
