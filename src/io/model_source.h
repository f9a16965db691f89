// Where a model comes from: `--model` names a local folder or a hub repo id
// ("Qwen/Qwen3-VL-2B-Instruct"). A repo id resolves to a folder in the
// Hugging Face cache (shared with Python tools, see hub_cache.h), downloading
// what is missing. This is the one entry point run/serve/info/tokenize call:
//
//   ModelSourceOptions opts;  // set by --revision, --offline, ... (cli/options.cpp)
//   std::string dir = resolve_model(model, opts);
//   ModelFolder folder = ModelFolder::open(dir);
#pragma once

#include <ostream>
#include <string>

namespace qvl {

struct ModelSourceOptions {
  std::string revision = "main";  // branch, tag or commit ("main" means "master" on ModelScope)
  bool offline = false;           // never touch the network: the cache or nothing
  std::string hf_token;           // empty: HF_TOKEN_PATH or HF_HOME/token (huggingface-cli login), if any
  std::string endpoint;           // empty: $HF_ENDPOINT / $MODELSCOPE_ENDPOINT, else the official hub
  std::string source = "huggingface";  // or "modelscope" ("hf", "ms" for short)
  std::string cache_dir;          // empty: HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub
  bool refresh = false;           // ask the hub even when the cache holds the revision (`qvl pull`)
  bool progress = true;           // progress bars / lines on `log`
  std::ostream* log = nullptr;    // nullptr: std::cerr (bars redrawn in place when it is a terminal)
  double progress_interval_s = 5; // not a terminal: one progress line this often
  // Network tuning (tests shorten these).
  int max_retries = 5;
  int retry_base_ms = 1000;
  long connect_timeout_s = 10;
  long stall_timeout_s = 30;
};

// A folder that exists is returned as is. Otherwise `model` must be a repo id:
// its cached snapshot for the revision if complete, else a download (unless
// offline). Returns the snapshot folder. Errors are one line saying what to do.
std::string resolve_model(const std::string& model, const ModelSourceOptions& opts);

// `qvl pull`: asks the hub for the revision's current commit and downloads
// what the cache lacks, even when an older snapshot is complete.
std::string pull_model(const std::string& repo_id, ModelSourceOptions opts);

}  // namespace qvl
