// Downloads what qvl needs of one revision of a repo into the cache: lists the
// repo, picks the files (hub_files.h), checks the free disk space, then for
// each file missing from blobs/: download into <etag>.incomplete (resumed),
// verify its size and hash against the etag, fsync, rename into place, and
// link it into snapshots/<commit>/. refs/<revision> is written last.
#pragma once

#include <ostream>
#include <string>

#include "io/hub_cache.h"
#include "io/hub_http.h"
#include "io/hub_remote.h"

namespace qvl::hub {

struct FetchOptions {
  std::string repo_id;
  std::string revision;
  std::ostream* log = nullptr;  // progress and notes; nullptr: silent
  bool tty = false;             // redraw bars in place (log is a terminal)
  double line_interval_s = 5;   // non-terminal progress: one line this often
};

// Returns the snapshot folder. Errors are one line saying what to do.
std::string fetch_snapshot(Remote& remote, HttpClient& http, const RepoCache& cache, const FetchOptions& opts);

// Bytes free for an unprivileged writer in the file system holding `dir`.
uint64_t free_bytes(const std::string& dir);

}  // namespace qvl::hub
