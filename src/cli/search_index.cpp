#include "cli/search_index.h"

#include "search/search_store_open.h"
#include "server/jobs/job_store_open.h"
#include "server/jobs/job_store_postgres.h"

namespace qvl::cli {

void visit_options(SearchIndexChoice& c, Args& v) {
  v(c.collection, "collection", "NAME", "the collection of pages (1-64 of A-Z a-z 0-9 . _ -)")
      .check([](const std::string& name) { return valid_collection_name(name) ? "" : "is not 1-64 of A-Z a-z 0-9 . _ -"; });
  v(c.index_db, "index-db", "URL",
    "where the pages are kept: a SQLite file (sqlite:PATH or PATH) searched exactly, or postgresql://USER@HOST/DB "
    "with pgvector (an HNSW index)")
      .unset("sqlite:STATE_DIR/search.db")
      .env("QVL_INDEX_DB");
  v(c.state_dir, "state-dir", "DIR", "folder of qvl's state (the default index)")
      .unset("$QVL_STATE_DIR, else $XDG_STATE_HOME/qvl, else ~/.local/state/qvl");
  v(c.ef_search, "ef-search", "N", "pgvector: candidates the HNSW index walks per query (recall against speed)")
      .range(1, 1000);
}

std::unique_ptr<SearchStore> open_index(const SearchIndexChoice& c) {
  SearchStoreOptions o;
  o.url = c.index_db;
  o.shown = redact_postgres_url(c.index_db);
  o.ef_search = c.ef_search;
  if (c.index_db.empty()) o.default_path = (c.state_dir.empty() ? default_state_dir() : c.state_dir) + "/search.db";
  return open_search_store(o);
}

}  // namespace qvl::cli
