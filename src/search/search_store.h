// Where document search keeps what it found: collections of documents (a
// file, and how to tell whether it changed), each with its pages (one unit
// vector from the embedding model, a small JPEG thumbnail). Two stores behind
// one interface (search_store_open.h): SQLite, searched exactly by a SIMD dot
// product over every stored vector of the collection (search_store_sqlite.h),
// and PostgreSQL with pgvector's HNSW index for many replicas and many pages
// (search_store_postgres.h).
//
// A collection takes the dimension of its first vectors; a vector of another
// is refused. Ids never repeat, so a thumbnail URL handed out never shows
// another page. Every method may throw qvl::Error naming the store and what
// failed; a store is safe to call from many threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace qvl {

struct SearchDocument {
  int64_t id = 0;
  std::string collection;
  std::string path;        // the file's absolute path (qvl index), or the name it was uploaded as (the server)
  int64_t size = 0;        // bytes
  int64_t mtime_ns = 0;    // the file's modification time when indexed; 0 for an upload
  std::string sha256;      // of the file's bytes
  int64_t pages = 0;
  int64_t indexed_at = 0;  // Unix seconds
  bool stored_content = false;  // the file's bytes are kept (an upload has no file to read back)
};

struct SearchPage {
  int64_t page = 1;                // 1-based; an image is page 1
  int64_t width = 0, height = 0;   // the page as rendered for the model, px
  std::vector<float> vector;       // [dimensions], unit length
  std::vector<uint8_t> thumbnail;  // JPEG
};

struct SearchHit {
  int64_t page_id = 0, document_id = 0;
  std::string path;
  int64_t page = 0;
  float score = 0;  // inner product with the query: its cosine, both being unit vectors
  int64_t width = 0;  // the page as indexed (SearchPage::width): rendered again at the dpi that gives it
};

struct SearchCollection {
  std::string name;
  int64_t dimensions = 0;
  std::string model;  // the embedding model that filled it
  int64_t documents = 0, pages = 0;
};

class SearchStore {
 public:
  virtual ~SearchStore() = default;
  virtual std::string name() const = 0;  // "sqlite" or "postgresql"

  virtual std::optional<SearchDocument> find(const std::string& collection, const std::string& path) = 0;
  virtual std::optional<SearchDocument> document(int64_t id) = 0;
  // Stores `doc` (its id and collection's counts ignored) with its pages, in
  // one transaction replacing the document at (doc.collection, doc.path) if
  // there is one; `content`, when given, the file's bytes. Creates the
  // collection on first use. Returns the new document's id.
  virtual int64_t put(const SearchDocument& doc, const std::vector<SearchPage>& pages,
                      std::span<const uint8_t> content, const std::string& model) = 0;
  // A file whose bytes did not change but whose size or time did (copied, touched).
  virtual void touch(int64_t id, int64_t size, int64_t mtime_ns) = 0;
  virtual bool remove(int64_t id) = 0;
  // The documents of `collection` (all collections when empty), by path.
  virtual std::vector<SearchDocument> documents(const std::string& collection) = 0;
  virtual std::vector<SearchCollection> collections() = 0;
  // The k pages of `collection` nearest to the unit vector `query`, best
  // first (ties: the older page first). Throws Error when the collection does
  // not exist or has another dimension.
  virtual std::vector<SearchHit> search(const std::string& collection, std::span<const float> query, int64_t k) = 0;
  virtual std::optional<SearchHit> page(int64_t page_id) = 0;  // score 0
  virtual std::optional<std::vector<uint8_t>> thumbnail(int64_t page_id) = 0;
  virtual std::optional<std::vector<uint8_t>> content(int64_t document_id) = 0;
};

// Collection names: 1-64 of [A-Za-z0-9._-] (they appear in URLs and SQL identifiers' comments).
bool valid_collection_name(const std::string& name);
inline constexpr const char* kDefaultCollection = "default";

}  // namespace qvl
