// The Hugging Face cache, laid out exactly as huggingface_hub writes it so a
// model fetched by Python tools is reused by qvl and the other way round:
//
//   <cache>/models--Org--Name/
//     blobs/<etag>                    file bytes, named by sha256 (LFS) or git blob sha1
//     blobs/<etag>.incomplete         a download in progress (resumed with HTTP Range)
//     snapshots/<commit>/<file>       relative symlink -> ../../blobs/<etag>
//     refs/<revision>                 the commit hash the revision pointed to
//   <cache>/.locks/models--Org--Name/<etag>.lock   flock(2), as Python's filelock
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qvl::hub {

// HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, else
// XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string default_cache_dir();

bool is_commit_hash(const std::string& s);  // 40 hex digits
// "Org/Name" with characters the hub allows; rejects paths and "..".
bool is_repo_id(const std::string& s);
std::string repo_folder_name(const std::string& repo_id);  // "models--Org--Name"
// The inverse for `qvl models`; empty if `folder` is not a model repo folder.
std::string repo_id_from_folder(const std::string& folder);

// The files of a snapshot qvl cannot run without that are absent (a dangling
// symlink counts as absent): config.json, tokenizer.json and the weights
// (model.safetensors, or the index and every shard it names).
std::vector<std::string> missing_files(const std::string& snapshot_dir);

class RepoCache {
 public:
  RepoCache(std::string cache_dir, const std::string& repo_id);

  const std::string& root() const { return root_; }
  std::string blob_path(const std::string& etag) const;
  std::string incomplete_path(const std::string& etag) const;
  std::string lock_path(const std::string& etag) const;
  std::string snapshot_dir(const std::string& commit) const;

  // The commit a revision names: itself if it is a commit hash with a
  // snapshot folder, else the content of refs/<revision>.
  std::optional<std::string> commit_for(const std::string& revision) const;
  // The snapshot folder of `revision` if it exists (complete or not).
  std::optional<std::string> snapshot_for(const std::string& revision) const;

  // Writers; each is atomic (temp file + rename) so a reader never sees half.
  void write_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<file> -> relative symlink to blobs/<etag>.
  void link(const std::string& commit, const std::string& file, const std::string& etag) const;

 private:
  std::string cache_dir_, root_;
};

// `qvl models`: every model repo in a cache folder.
struct CachedRevision {
  std::string revision;  // a ref name, or empty for a snapshot no ref names
  std::string commit;
  bool complete = false;
  std::vector<std::string> missing;
};

struct CachedModel {
  std::string repo_id;
  std::string folder;
  uint64_t bytes_on_disk = 0;     // complete blobs
  uint64_t bytes_incomplete = 0;  // *.incomplete downloads waiting to resume
  std::vector<CachedRevision> revisions;
};

std::vector<CachedModel> scan_cache(const std::string& cache_dir);

}  // namespace qvl::hub
