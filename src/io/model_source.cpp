#include "io/model_source.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "io/hub_cache.h"
#include "io/hub_fetch.h"
#include "io/hub_http.h"
#include "io/hub_remote.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace fs = std::filesystem;

namespace qvl {
namespace {

constexpr const char* kHfEndpoint = "https://huggingface.co";
constexpr const char* kModelScopeEndpoint = "https://www.modelscope.cn";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool is_modelscope(const std::string& source) {
  if (source == "modelscope" || source == "ms") return true;
  if (source == "huggingface" || source == "hf" || source.empty()) return false;
  throw UsageError(cat("--source must be huggingface or modelscope, got '", source, "'"));
}

std::string endpoint_for(const ModelSourceOptions& o, bool modelscope) {
  std::string e = o.endpoint;
  if (e.empty()) e = env(modelscope ? "MODELSCOPE_ENDPOINT" : "HF_ENDPOINT");
  if (e.empty()) e = modelscope ? kModelScopeEndpoint : kHfEndpoint;
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

// The token `huggingface-cli login` saved, as huggingface_hub finds it.
std::string saved_token() {
  std::string path = env("HF_TOKEN_PATH");
  if (path.empty()) {
    std::string home = env("HF_HOME");
    if (home.empty()) {
      std::string xdg = env("XDG_CACHE_HOME");
      home = (xdg.empty() ? env("HOME") + "/.cache" : xdg) + "/huggingface";
    }
    path = home + "/token";
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  std::string t = read_file(path);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  return t;
}

bool looks_like_path(const std::string& s) {
  return s.front() == '/' || s.front() == '.' || s.front() == '~' || s.find('/') == std::string::npos ||
         s.find('/') != s.rfind('/');
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string from_hub(const std::string& repo, const ModelSourceOptions& o) {
  bool modelscope = is_modelscope(o.source);
  std::string revision = o.revision.empty() ? "main" : o.revision;
  if (modelscope && revision == "main") revision = "master";  // ModelScope's default branch
  std::string cache_dir = o.cache_dir.empty() ? hub::default_cache_dir() : o.cache_dir;
  hub::RepoCache cache(cache_dir, repo);

  if (!o.refresh || o.offline) {
    if (std::optional<std::string> snap = cache.snapshot_for(revision)) {
      std::vector<std::string> missing = hub::missing_files(*snap);
      if (missing.empty()) return *snap;
      if (o.offline)
        fail("offline (--offline or HF_HUB_OFFLINE) and the cached ", repo, " (revision ", revision, ") in ", *snap,
             " lacks ", join(missing), ": run `qvl pull ", repo, "` while online, or pass a local folder to --model");
    } else if (o.offline) {
      fail("offline (--offline or HF_HUB_OFFLINE) and ", repo, " (revision ", revision, ") is not in the cache ",
           cache_dir, ": run `qvl pull ", repo, "` while online, or pass a local folder to --model");
    }
  }

  std::ostream* log = o.log ? o.log : &std::cerr;
  hub::HttpSettings http_settings;
  http_settings.token = modelscope ? "" : (o.hf_token.empty() ? saved_token() : o.hf_token);
  http_settings.connect_timeout_s = o.connect_timeout_s;
  http_settings.stall_timeout_s = o.stall_timeout_s;
  http_settings.max_retries = o.max_retries;
  http_settings.retry_base_ms = o.retry_base_ms;
  if (o.progress) http_settings.note = [log](const std::string& line) { *log << "qvl: " << line << "\n"; };
  hub::HttpClient http(http_settings);

  std::string endpoint = endpoint_for(o, modelscope);
  std::unique_ptr<hub::Remote> remote =
      modelscope ? hub::make_modelscope_remote(http, endpoint, repo, revision)
                 : hub::make_huggingface_remote(http, endpoint, repo, revision, !http_settings.token.empty());
  hub::FetchOptions fetch;
  fetch.repo_id = repo;
  fetch.revision = revision;
  fetch.log = o.progress ? log : nullptr;
  fetch.tty = log == &std::cerr && ::isatty(STDERR_FILENO);
  fetch.line_interval_s = o.progress_interval_s;
  try {
    return hub::fetch_snapshot(*remote, http, cache, fetch);
  } catch (const hub::NetworkError& e) {
    fail("cannot reach ", endpoint, " to download ", repo, " (", e.what(), "): check the network, ",
         modelscope ? "set MODELSCOPE_ENDPOINT, try --source huggingface"
                    : "set HF_ENDPOINT to a mirror, try --source modelscope",
         ", or pass a local folder to --model");
  }
}

}  // namespace

std::string resolve_model(const std::string& model, const ModelSourceOptions& opts) {
  if (model.empty()) throw UsageError("--model is empty: pass a model folder or a repo id like Qwen/Qwen3-VL-2B-Instruct");
  std::error_code ec;
  fs::file_status st = fs::status(model, ec);
  if (fs::is_directory(st)) return model;
  if (fs::exists(st))
    fail("--model ", model, " is a file; pass the folder that holds config.json, or a repo id like Qwen/Qwen3-VL-2B-Instruct");
  if (looks_like_path(model) || !hub::is_repo_id(model))
    fail("--model ", model, ": no such folder, and not a repo id like Qwen/Qwen3-VL-2B-Instruct");
  return from_hub(model, opts);
}

std::string pull_model(const std::string& repo_id, ModelSourceOptions opts) {
  if (!hub::is_repo_id(repo_id))
    throw UsageError(cat("pull: '", repo_id, "' is not a repo id like Qwen/Qwen3-VL-2B-Instruct"));
  opts.refresh = true;
  return from_hub(repo_id, opts);
}

}  // namespace qvl
