// The "sqlite:PATH" job store, qvl's default (PATH: --state-dir's jobs.db):
// Debian's libsqlite3, WAL, every state change one transaction, so jobs,
// batches and stored responses survive a restart, a crash or kill -9. Its
// lifecycle is sql_job_store.h's; this file keeps the connection, the schema
// and SQLite's SQL (sql_database.h). A full disk is JobStoreFull.
// Several processes may open one file (leases keep a job with one runner),
// but replicas on several machines want PostgreSQL.
//
// The schema is qvl's own, created and migrated step by step on open
// (PRAGMA user_version: kSqliteSchemaVersion); a file from a newer qvl is
// refused rather than misread.
#pragma once

#include <memory>
#include <string>

#include "server/jobs/job_store.h"

namespace qvl {

constexpr int kSqliteSchemaVersion = 3;

// Opens (creating the file and its folder when missing) or throws Error
// naming the path.
std::unique_ptr<JobStore> open_sqlite_job_store(const std::string& path, const JobStoreOptions& options);

}  // namespace qvl
