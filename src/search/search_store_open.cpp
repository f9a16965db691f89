#include "search/search_store_open.h"

#include <filesystem>

#include "search/search_store_postgres.h"
#include "search/search_store_sqlite.h"
#include "util/error.h"

namespace qvl {

std::unique_ptr<SearchStore> open_search_store(const SearchStoreOptions& options) {
  const std::string& url = options.url;
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
    return open_postgres_search_store({url, options.shown.empty() ? url : options.shown, options.ef_search});
  std::string path = url.empty() ? options.default_path : url.rfind("sqlite:", 0) == 0 ? url.substr(7) : url;
  if (path.empty()) throw Error("--index-db: no SQLite file named");
  if (const auto dir = std::filesystem::path(path).parent_path(); !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(cat("search index ", path, ": cannot create its folder: ", ec.message()));
  }
  return open_sqlite_search_store(path);
}

}  // namespace qvl
