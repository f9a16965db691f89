// The "postgresql://…" job store: one queue that any number of replicas
// share (Debian's libpq). Its lifecycle is sql_job_store.h's; this file
// keeps the connection, the schema and PostgreSQL's SQL (sql_database.h).
//
// Any replica accepts a job and answers any poll or cancel; a replica
// claims a queued job only when its scheduler has a free place (SELECT …
// FOR UPDATE SKIP LOCKED, so two replicas never take the same row and
// neither waits on the other); NOTIFY on every change a runner may act on
// wakes the idle replicas' LISTEN connections instead of having them poll;
// a running job whose replica died is claimed again once its lease (renewed
// by heartbeats) runs out.
//
// Leases, TTLs and finish times are read from the database's clock, so
// replicas whose clocks disagree still agree on whose lease ran out.
//
// The database going away (a restart, a failover, a network cut) is an
// outage, never a crash: every call then throws StoreUnavailable at once,
// unavailable() says why (for /health), and the store connects again with
// backoff (100 ms doubling to 2 s; the listener LISTENs again), bounded by
// libpq's connect_timeout and TCP keepalives when the network goes silent.
// A database away when the store opens is the same outage: the server
// starts, and the schema is made when it is first reached. Only what a
// restart cannot fix refuses to open: a malformed URL, a newer schema.
//
// The tables are qvl_*; the schema is created and migrated by qvl on open,
// step by step (qvl_schema.version: kPostgresSchemaVersion), with an
// advisory lock so replicas starting together migrate once; a schema from a
// newer qvl is refused rather than misread.
#pragma once

#include <memory>
#include <string>

#include "server/jobs/job_store.h"

namespace qvl {

constexpr int kPostgresSchemaVersion = 1;

// Connects (a libpq URL: postgresql://user:password@host:port/db?…) and
// migrates, or opens unavailable when the server cannot be reached; throws
// Error naming the server (never the password) for a malformed URL or a
// schema it cannot use.
std::unique_ptr<JobStore> open_postgres_job_store(const std::string& url, const JobStoreOptions& options);

// The URL with its password (user:PASSWORD@ or password=…) replaced by ***,
// for logs and errors.
std::string redact_postgres_url(const std::string& url);

}  // namespace qvl
