// The routes of a model hub, behind one interface so the download logic is the
// same for every hub:
//  - Hugging Face (and mirrors that copy its API, via HF_ENDPOINT):
//      GET  {endpoint}/api/models/{repo}/revision/{revision} -> {"sha", "siblings":[{"rfilename"}]}
//      HEAD {endpoint}/{repo}/resolve/{commit}/{file}        -> ETag / X-Linked-Etag (blob name),
//           Content-Length / X-Linked-Size; a 302 to the CDN for LFS files; GET follows it.
//  - ModelScope:
//      GET {endpoint}/api/v1/models/{repo}/repo/files?Revision={rev}&Recursive=True
//          -> {"Code":200,"Data":{"Files":[{"Path","Size","Sha256","Type"}]}}
//      GET {endpoint}/api/v1/models/{repo}/repo?Revision={rev}&FilePath={file}
//    ModelScope has no per-listing commit id, so the snapshot folder is named by
//    a content id: the SHA-1 of the sorted "path sha256" lines of the repo's
//    files. Blobs are named by their SHA-256 (as Hugging Face names LFS blobs),
//    so the cache layout is the same and a changed file gives a new snapshot.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/hub_http.h"

namespace qvl::hub {

struct RemoteListing {
  std::string commit;              // the snapshot folder name
  std::vector<std::string> files;  // every file of the repo, relative paths
};

struct RemoteFile {
  std::string path;  // in the repo
  std::string url;   // GET this for the bytes
  std::string etag;  // the blob name: sha256 (64 hex) or git blob sha1 (40 hex); checked after download
  uint64_t size = 0;
};

class Remote {
 public:
  virtual ~Remote() = default;
  virtual const std::string& endpoint() const = 0;
  virtual RemoteListing list(const std::string& revision) = 0;
  virtual RemoteFile describe(const RemoteListing& listing, const std::string& path) = 0;
  // Turns a failed answer into one line that says what to do; never returns.
  [[noreturn]] virtual void fail_http(const HttpResponse& r, const std::string& what) const = 0;
};

std::unique_ptr<Remote> make_huggingface_remote(HttpClient& http, std::string endpoint, std::string repo_id,
                                                std::string revision, bool has_token);
std::unique_ptr<Remote> make_modelscope_remote(HttpClient& http, std::string endpoint, std::string repo_id,
                                               std::string revision);

// "W/\"abc\"" -> "abc", as huggingface_hub normalises ETags.
std::string normalize_etag(const std::string& etag);

}  // namespace qvl::hub
