// The Hugging Face hub's routes (see hub_remote.h).
#include <nlohmann/json.hpp>

#include "io/hub_remote.h"
#include "io/hub_sha.h"
#include "util/error.h"

namespace qvl::hub {
namespace {

std::string error_detail(const HttpResponse& r) {
  if (std::string m = r.header("x-error-message"); !m.empty()) return m;
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
  return "";
}

uint64_t parse_size(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoull(s);
}

class HuggingFace : public Remote {
 public:
  HuggingFace(HttpClient& http, std::string endpoint, std::string repo, std::string revision, bool has_token)
      : http_(http), endpoint_(std::move(endpoint)), repo_(std::move(repo)), revision_(std::move(revision)),
        has_token_(has_token) {}

  const std::string& endpoint() const override { return endpoint_; }

  RemoteListing list(const std::string& revision) override {
    std::string url = endpoint_ + "/api/models/" + repo_ + "/revision/" + url_encode(revision, false);
    HttpResponse r = http_.get(url);
    if (r.status != 200) fail_http(r, "listing the files");
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("sha") || !j["sha"].is_string() || !j.contains("siblings") ||
        !j["siblings"].is_array())
      fail(url, " did not answer with a model listing (\"sha\", \"siblings\"); is ", endpoint_,
           " a Hugging Face hub? (HF_ENDPOINT)");
    RemoteListing out;
    out.commit = j["sha"].get<std::string>();
    if (!is_hex(out.commit, 40)) fail(url, ": \"sha\" is not a commit hash: '", out.commit, "'");
    for (const auto& s : j["siblings"])
      if (s.is_object() && s.contains("rfilename") && s["rfilename"].is_string())
        out.files.push_back(s["rfilename"].get<std::string>());
    return out;
  }

  RemoteFile describe(const RemoteListing& listing, const std::string& path) override {
    // Pinned to the listed commit so every file comes from the same snapshot
    // even if the branch moves while we download.
    std::string url = endpoint_ + "/" + repo_ + "/resolve/" + listing.commit + "/" + url_encode(path, true);
    HttpResponse r = http_.head(url);
    bool redirect = r.status >= 300 && r.status < 400;
    if (r.status != 200 && !redirect) fail_http(r, cat("fetching metadata of ", path));
    RemoteFile f;
    f.path = path;
    f.url = url;
    // LFS files: X-Linked-* describe the file behind the redirect; the plain
    // headers describe the redirect itself (huggingface_hub does the same).
    f.etag = normalize_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
    std::string size = r.header("x-linked-size");
    if (size.empty() && !redirect) size = r.header("content-length");
    f.size = parse_size(size);
    if (f.etag.empty() || f.etag.find('/') != std::string::npos || f.etag.find("..") != std::string::npos)
      fail(endpoint_, " gave no usable ETag for ", repo_, "/", path, " (HEAD ", url, "); is it a Hugging Face hub?");
    return f;
  }

  [[noreturn]] void fail_http(const HttpResponse& r, const std::string& what) const override {
    std::string code = r.header("x-error-code"), detail = error_detail(r);
    std::string where = cat(repo_, " (revision ", revision_, ") on ", endpoint_);
    if (code == "GatedRepo" || (r.status == 403 && code != "RepoNotFound"))
      fail("access to ", where, " denied (HTTP ", r.status, ", ", what, "): the repo is gated or private; accept "
           "its terms on the model page and set HF_TOKEN or pass --hf-token",
           has_token_ ? " (the token given was not accepted)" : "");
    if (code == "RevisionNotFound")
      fail("no revision '", revision_, "' in ", repo_, " on ", endpoint_, " (HTTP ", r.status,
           "): check --revision (a branch, tag or commit)");
    if (code == "RepoNotFound" || r.status == 404)
      fail("no model repo ", repo_, " on ", endpoint_, " (HTTP ", r.status, ", ", what,
           "): check the name (Org/Name, case-sensitive) and --revision", has_token_ ? "" : "; if it is private, set HF_TOKEN");
    if (r.status == 401)
      fail("access to ", where, " denied (HTTP 401, ", what, "): the repo is gated or private; set HF_TOKEN or pass "
           "--hf-token", has_token_ ? " (the token given was not accepted)" : "");
    if (r.status >= 500 || r.status == 429)
      fail(endpoint_, " failed with HTTP ", r.status, " while ", what, " for ", where, " after ", r.attempts,
           " attempts; try again later, set HF_ENDPOINT to a mirror, or use --source modelscope");
    fail(endpoint_, " answered HTTP ", r.status, " while ", what, " for ", where, detail.empty() ? "" : ": " + detail);
  }

 private:
  HttpClient& http_;
  std::string endpoint_, repo_, revision_;
  bool has_token_;
};

}  // namespace

std::string normalize_etag(const std::string& etag) {
  std::string e = etag;
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  while (!e.empty() && e.front() == '"') e.erase(e.begin());
  while (!e.empty() && e.back() == '"') e.pop_back();
  return e;
}

std::unique_ptr<Remote> make_huggingface_remote(HttpClient& http, std::string endpoint, std::string repo_id,
                                                std::string revision, bool has_token) {
  return std::make_unique<HuggingFace>(http, std::move(endpoint), std::move(repo_id), std::move(revision), has_token);
}

}  // namespace qvl::hub
