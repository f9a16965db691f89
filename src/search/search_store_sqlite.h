// The default search store: one SQLite file (search.db in the state folder).
// Vectors are float32 blobs; a search reads the collection's vectors once
// into memory (kept until the collection changes: its generation, bumped by
// every write, is checked per search, so another process's writes are seen)
// and scores them all with dot_rows (ops/dot_rows.h): exact, no index.
#pragma once

#include <memory>
#include <string>

#include "search/search_store.h"

namespace qvl {

std::unique_ptr<SearchStore> open_sqlite_search_store(const std::string& path);

}  // namespace qvl
