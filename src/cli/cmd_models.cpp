// `qvl models`: the models in the Hugging Face cache, with revisions, sizes
// and whether each snapshot holds everything qvl needs.
#include <iomanip>
#include <iostream>

#include "cli/commands.h"
#include "io/hub_cache.h"
#include "io/hub_progress.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {

int cmd_models(int argc, char** argv) {
  Args args("models", "[options]",
            "List the models in the Hugging Face cache (shared with Python tools): repo, revision -> commit,\n"
            "size on disk, and whether the snapshot is complete.");
  std::string dir;
  args(dir, "cache-dir", "DIR", "cache folder").unset("HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub");
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty()) throw UsageError("models: takes no arguments (see qvl models --help)");
  if (!args.has("cache-dir")) dir = hub::default_cache_dir();
  std::vector<hub::CachedModel> models = hub::scan_cache(dir);
  if (models.empty()) {
    std::cout << "no models in " << dir << "\n";
    return 0;
  }
  size_t repo_w = 4;
  for (const auto& m : models) repo_w = std::max(repo_w, m.repo_id.size());
  auto row = [&](const std::string& repo, const std::string& rev, const std::string& commit, const std::string& size,
                 const std::string& status) {
    std::cout << std::left << std::setw(static_cast<int>(repo_w) + 2) << repo << std::setw(12) << rev
              << std::setw(14) << commit << std::setw(10) << size << status << "\n";
  };
  row("REPO", "REVISION", "COMMIT", "SIZE", "STATUS");
  for (const auto& m : models) {
    std::string size = hub::format_bytes(m.bytes_on_disk);
    if (m.revisions.empty()) row(m.repo_id, "-", "-", size, "no snapshot");
    for (const auto& r : m.revisions) {
      std::string status = r.complete ? "complete" : "incomplete (missing " + r.missing.front() +
                                                         (r.missing.size() > 1 ? cat(" and ", r.missing.size() - 1, " more") : "") + ")";
      if (m.bytes_incomplete > 0) status += cat(", ", hub::format_bytes(m.bytes_incomplete), " partly downloaded");
      row(m.repo_id, r.revision.empty() ? "-" : r.revision, r.commit.substr(0, 12), size, status);
    }
  }
  std::cout << "cache: " << dir << "\n";
  return 0;
}

}  // namespace qvl::cli
