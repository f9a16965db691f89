// The search store `--index-db` names: empty (SQLite at the caller's
// default, search.db in the state folder), "sqlite:PATH" or a file path, or
// postgresql://… (pgvector).
#pragma once

#include <memory>
#include <string>

#include "search/search_store.h"

namespace qvl {

struct SearchStoreOptions {
  std::string url;           // --index-db
  std::string default_path;  // the SQLite file when url is empty
  std::string shown;         // url as errors show it (the password hidden); empty: url
  int ef_search = 400;       // pgvector's hnsw.ef_search: recall@10 1.0 on 10k random 2048-d pages (docs/search.md)
};

std::unique_ptr<SearchStore> open_search_store(const SearchStoreOptions& options);

}  // namespace qvl
