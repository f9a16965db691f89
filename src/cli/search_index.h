// The options qvl index and qvl search share: which collection, and where
// the index is (--index-db; by default search.db in the state folder, beside
// the server's jobs.db).
#pragma once

#include <memory>
#include <string>

#include "search/search_store.h"
#include "util/args.h"

namespace qvl::cli {

struct SearchIndexChoice {
  std::string collection = kDefaultCollection;
  std::string index_db;   // empty: sqlite at STATE_DIR/search.db
  std::string state_dir;  // empty: default_state_dir()
  int ef_search = 400;
};

void visit_options(SearchIndexChoice& c, Args& v);

// Throws Error naming the index when it cannot be opened.
std::unique_ptr<SearchStore> open_index(const SearchIndexChoice& c);

}  // namespace qvl::cli
