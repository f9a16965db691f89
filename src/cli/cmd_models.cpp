// `qvl models`: the models in the Hugging Face cache, with revisions, sizes
// and whether each snapshot holds everything qvl needs; then the q8/q4 files
// of the weight cache (engine/weight_cache_files.h).
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/weight_cache_files.h"
#include "io/hub_cache.h"
#include "io/hub_progress.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {

namespace {

void list_hub_models(const std::string& dir) {
  std::vector<hub::CachedModel> models = hub::scan_cache(dir);
  if (models.empty()) {
    std::cout << "no models in " << dir << "\n";
    return;
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
}

void print_weight_cache(const WeightCacheListing& cache) {
  const std::vector<WeightCacheFile>& files = cache.files;
  std::cout << "\n";
  if (files.empty()) {
    std::cout << "no q8/q4 weights in " << cache.dir << "\n";
    return;
  }
  std::cout << std::left << std::setw(14) << "WEIGHTS" << std::setw(8) << "FORMAT" << std::setw(10) << "SIZE"
            << std::setw(18) << "LAST USED" << "MADE FROM\n";
  uint64_t total = 0;
  for (const WeightCacheFile& f : files) {
    total += f.bytes;
    char used[32] = "-";
    std::tm tm{};
    if (f.last_used > 0 && localtime_r(&f.last_used, &tm)) std::strftime(used, sizeof used, "%Y-%m-%d %H:%M", &tm);
    const std::string name = std::filesystem::path(f.path).filename().string().substr(0, 12);
    std::cout << std::left << std::setw(14) << name << std::setw(8) << (f.valid ? f.format : "?") << std::setw(10)
              << hub::format_bytes(f.bytes) << std::setw(18) << used
              << (f.valid ? f.source : "unusable (" + f.problem + "), rebuilt at next use") << "\n";
  }
  std::cout << "weight cache: " << cache.dir << " (" << hub::format_bytes(total) << ")\n";
}

}  // namespace

int cmd_models(int argc, char** argv) {
  Args args("models", "[options]",
            "List the models in the Hugging Face cache (shared with Python tools): repo, revision -> commit,\n"
            "size on disk, and whether the snapshot is complete; then the files of the q8/q4 weight cache\n"
            "(qvl quantize): format, size, last use and the model folder each was made from.");
  std::string dir;
  args(dir, "cache-dir", "DIR", "cache folder").unset("HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub");
  WeightCacheOptions weight_cache;
  visit_options(weight_cache, args);
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty()) throw UsageError("models: takes no arguments (see qvl models --help)");
  if (!args.has("cache-dir")) dir = hub::default_cache_dir();
  list_hub_models(dir);
  print_weight_cache(list_weight_cache(weight_cache));
  return 0;
}

}  // namespace qvl::cli
