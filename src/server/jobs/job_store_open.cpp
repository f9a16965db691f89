#include "server/jobs/job_store_open.h"

#include <cstdlib>

#include "server/jobs/job_store_memory.h"
#include "server/jobs/job_store_postgres.h"
#include "server/jobs/job_store_sqlite.h"
#include "util/error.h"

namespace qvl {

std::string default_state_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string d = env("QVL_STATE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_STATE_HOME"); !d.empty()) return d + "/qvl";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.local/state/qvl";
  throw Error("no folder for qvl's state: set --state-dir, QVL_STATE_DIR, XDG_STATE_HOME or HOME");
}

std::unique_ptr<JobStore> open_job_store(const JobStoreOptions& options) {
  const std::string& url = options.url;
  if (url == "memory") return std::make_unique<MemoryJobStore>(options);
  if (url.empty()) {
    const std::string dir = options.state_dir.empty() ? default_state_dir() : options.state_dir;
    return open_sqlite_job_store(dir + "/jobs.db", options);
  }
  if (url.rfind("sqlite:", 0) == 0 && url.size() > 7) return open_sqlite_job_store(url.substr(7), options);
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
    return open_postgres_job_store(url, options);
  throw Error(cat("--jobs-db '", redact_postgres_url(url),
                  "': not a job store qvl knows (memory, sqlite:PATH, postgresql://…)"));
}

}  // namespace qvl
