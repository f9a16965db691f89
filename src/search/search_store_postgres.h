// The search store many replicas share: PostgreSQL with pgvector (Debian's
// postgresql-<version>-pgvector; `CREATE EXTENSION vector` on first use).
// Each collection gets an HNSW index of its own (a partial index on its
// rows) over the inner product of the unit vectors: vector_ip_ops up to 2000
// dimensions, halfvec_ip_ops (vectors rounded to f16 for the index only) up
// to 4000 — pgvector's HNSW limits; the 2B embedding's 2048 takes the
// second. A collection over 4000 dimensions (the 8B's 4096) is searched by
// an exact scan. Results are rescored with the float32 vectors, so the
// approximation only decides which pages come back, not their scores.
#pragma once

#include <memory>
#include <string>

#include "search/search_store.h"

namespace qvl {

struct PostgresSearchOptions {
  std::string url;    // postgresql://…
  std::string shown;  // the URL as errors show it (without its password)
  int ef_search = 400;  // hnsw.ef_search: candidates the index walks per query (pgvector's default is 40)
};

// Throws Error naming the server (and the Debian package) when it cannot be
// reached or has no pgvector.
std::unique_ptr<SearchStore> open_postgres_search_store(const PostgresSearchOptions& options);

}  // namespace qvl
