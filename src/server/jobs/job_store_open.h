// Opens the job store `qvl serve --jobs-db URL` names (job_store.h).
#pragma once

#include <memory>
#include <string>

#include "server/jobs/job_store.h"

namespace qvl {

// Where qvl keeps its state when --state-dir is not given: $QVL_STATE_DIR,
// else $XDG_STATE_HOME/qvl, else ~/.local/state/qvl.
std::string default_state_dir();

// "memory", "sqlite:PATH", or empty: sqlite at --state-dir's jobs.db
// (default_state_dir() when none). Throws Error naming the URL when it is not one qvl knows or the
// store cannot be opened.
std::unique_ptr<JobStore> open_job_store(const JobStoreOptions& options);

}  // namespace qvl
