// ModelScope's routes (see hub_remote.h for the snapshot naming).
#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "io/hub_remote.h"
#include "io/hub_sha.h"
#include "util/error.h"

namespace qvl::hub {
namespace {

struct FileInfo {
  uint64_t size = 0;
  std::string sha256;
};

class ModelScope : public Remote {
 public:
  ModelScope(HttpClient& http, std::string endpoint, std::string repo, std::string revision)
      : http_(http), endpoint_(std::move(endpoint)), repo_(std::move(repo)), revision_(std::move(revision)) {}

  const std::string& endpoint() const override { return endpoint_; }

  RemoteListing list(const std::string& revision) override {
    std::string url = endpoint_ + "/api/v1/models/" + repo_ + "/repo/files?Revision=" + url_encode(revision, false) +
                      "&Recursive=True";
    HttpResponse r = http_.get(url);
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    // ModelScope reports some errors as HTTP 200 with a "Code" in the body.
    bool body_ok = j.is_object() && j.value("Code", 200) == 200 && j.value("Success", true);
    if (r.status != 200 || !body_ok) {
      if (r.status == 200) r.status = j.is_object() && j.contains("Code") && j["Code"].is_number() ? 404 : 502;
      fail_http(r, "listing the files");
    }
    const nlohmann::json* files = nullptr;
    if (j.contains("Data") && j["Data"].is_object() && j["Data"].contains("Files") && j["Data"]["Files"].is_array())
      files = &j["Data"]["Files"];
    if (!files) fail(url, " did not answer with a file listing (Data.Files); is ", endpoint_, " ModelScope? (MODELSCOPE_ENDPOINT)");
    RemoteListing out;
    std::vector<std::string> lines;
    for (const auto& f : *files) {
      if (!f.is_object() || !f.contains("Path") || !f["Path"].is_string()) continue;
      if (f.value("Type", std::string("blob")) == "tree") continue;
      std::string path = f["Path"].get<std::string>();
      FileInfo info;
      if (f.contains("Size") && f["Size"].is_number_unsigned()) info.size = f["Size"].get<uint64_t>();
      if (f.contains("Sha256") && f["Sha256"].is_string()) info.sha256 = f["Sha256"].get<std::string>();
      for (char& c : info.sha256) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.files.push_back(path);
      lines.push_back(path + " " + info.sha256 + "\n");
      files_[path] = info;
    }
    std::sort(lines.begin(), lines.end());
    Sha1 id;
    for (const std::string& l : lines) id.update(l.data(), l.size());
    out.commit = id.hex();
    return out;
  }

  RemoteFile describe(const RemoteListing&, const std::string& path) override {
    auto it = files_.find(path);
    if (it == files_.end()) fail("ModelScope listing of ", repo_, " has no ", path);
    if (!is_hex(it->second.sha256, 64))
      fail("ModelScope gave no SHA-256 for ", repo_, "/", path, ", so the download could not be verified");
    RemoteFile f;
    f.path = path;
    f.url = endpoint_ + "/api/v1/models/" + repo_ + "/repo?Revision=" + url_encode(revision_, false) +
            "&FilePath=" + url_encode(path, false);
    f.etag = it->second.sha256;
    f.size = it->second.size;
    return f;
  }

  [[noreturn]] void fail_http(const HttpResponse& r, const std::string& what) const override {
    std::string where = cat(repo_, " (revision ", revision_, ") on ModelScope ", endpoint_);
    if (r.status == 401 || r.status == 403)
      fail("access to ", where, " denied (HTTP ", r.status, ", ", what, "): the model is private or needs a "
           "login, which qvl does not do for ModelScope; use --source huggingface with HF_TOKEN, or a local folder");
    if (r.status == 404)
      fail("no model ", repo_, " with revision '", revision_, "' on ModelScope ", endpoint_, " (", what,
           "): check the name (Org/Name) and --revision (ModelScope's default branch is master)");
    if (r.status >= 500 || r.status == 429)
      fail("ModelScope ", endpoint_, " failed with HTTP ", r.status, " while ", what, " for ", where, " after ",
           r.attempts, " attempts; try again later or use --source huggingface");
    fail("ModelScope ", endpoint_, " answered HTTP ", r.status, " while ", what, " for ", where);
  }

 private:
  HttpClient& http_;
  std::string endpoint_, repo_, revision_;
  std::map<std::string, FileInfo> files_;
};

}  // namespace

std::unique_ptr<Remote> make_modelscope_remote(HttpClient& http, std::string endpoint, std::string repo_id,
                                               std::string revision) {
  return std::make_unique<ModelScope>(http, std::move(endpoint), std::move(repo_id), std::move(revision));
}

}  // namespace qvl::hub
