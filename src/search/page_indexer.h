// From files to a collection's pages (search_store.h): a PDF's pages,
// rendered at the default document settings (kDefaultPdfDpi, the PDF caps of
// the intake) through the media intake every front end uses, or an image as
// one page; each page embedded by a Qwen3-VL-Embedding model with the
// documents' default instruction (engine/retrieval.h), its thumbnail a small
// JPEG, its source the file's path, page number, size, time and SHA-256.
//
// A file already stored is skipped when its size and time match (nothing
// read beyond its metadata), or its bytes' SHA-256 does (the time is brought
// up to date); otherwise its pages replace the stored ones, in one
// transaction, only once all of them are embedded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "media/intake.h"
#include "pdf/pdf_pages.h"
#include "search/search_store.h"

namespace qvl {

// A thumbnail's longest side, px, as the page's document thumbnails (server/documents/document_pages.h).
inline constexpr int kSearchThumbnailSize = 256;
// The query's instruction: retrieval of pages for a question (the model card's example for queries).
inline constexpr const char* kSearchQueryInstruction = "Retrieve the document pages that answer the user's question.";

// Pages of one indexed file at most. A file's pages are rendered and
// embedded a few at a time (IndexOptions::batch_pages), so the per-request
// caps of a chat (32 pages, 64 Mpx in all) do not apply; each page's own cap does.
inline constexpr int kMaxIndexedPages = 5000;
MediaLimits indexing_limits(MediaLimits limits);

struct IndexOptions {
  std::string collection = kDefaultCollection;
  std::string model;      // recorded with a new collection
  PdfRenderRequest pdf;   // every page at kDefaultPdfDpi
  int64_t dimensions = 0;  // MRL: 0 keeps the model's hidden size
  int batch_pages = 4;    // pages embedded per engine call: bounds the rendered pages held at once
};

enum class IndexOutcome { Added, Replaced, Unchanged };
const char* outcome_name(IndexOutcome o);  // "added", "replaced", "unchanged"

struct IndexedFile {
  std::string path;
  IndexOutcome outcome = IndexOutcome::Added;
  int64_t document_id = 0;
  int64_t pages = 0;
};

class PageIndexer {
 public:
  PageIndexer(Engine& engine, SearchStore& store, IndexOptions options)
      : engine_(engine), store_(store), options_(std::move(options)) {}

  // A file on disk, stored under its absolute path. Throws Error naming it.
  IndexedFile index_file(const std::string& path, MediaIntake& intake);
  // Bytes under a name (an upload), kept in the store since no file holds them.
  IndexedFile index_bytes(const std::string& name, std::span<const uint8_t> bytes, MediaIntake& intake);

 private:
  IndexedFile store_pages(SearchDocument doc, std::span<const uint8_t> bytes, bool keep_content, MediaIntake& intake,
                          bool existed);
  Engine& engine_;
  SearchStore& store_;
  IndexOptions options_;
};

// Each page of a PDF (or the one page of an image) as the model will see
// it: rendered at `pdf`'s settings under the intake's limits. `on_page`
// takes them one at a time, in order.
void for_each_page(std::span<const uint8_t> bytes, const PdfRenderRequest& pdf, MediaIntake& intake,
                   const std::string& name, const std::function<void(int64_t page, std::shared_ptr<const Image>)>& on_page);

// The JPEG thumbnail of a page: its longest side `size` px (never enlarged).
std::vector<uint8_t> page_thumbnail(const Image& page, int size = kSearchThumbnailSize);

// The unit vector of a text query (kSearchQueryInstruction unless given).
std::vector<float> embed_query(Engine& engine, const std::string& query, int64_t dimensions,
                               const std::optional<std::string>& instruction = std::nullopt);

std::string sha256_hex(std::span<const uint8_t> bytes);

}  // namespace qvl
