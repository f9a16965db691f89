// A stored page back as the model saw it (reranking the best pages, or
// attaching one to a chat): its document's bytes — an upload's kept copy, or
// the file on disk when it still has the bytes that were indexed — and the
// page rendered from them as the indexer rendered it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "media/intake.h"
#include "pdf/pdf_pages.h"
#include "search/search_store.h"

namespace qvl {

// Throws Error naming the file when it is gone or changed since it was indexed.
std::vector<uint8_t> document_bytes(SearchStore& store, const SearchDocument& doc, size_t max_bytes);

// Page `page` (from 1) of a PDF's bytes, or the image (page 1). A PDF page
// is rendered `width` px wide when given (SearchHit::width: at the dpi it
// was indexed at, whatever that was, within the intake's dpi limits), else
// at `pdf`'s dpi.
std::shared_ptr<const Image> page_image(std::span<const uint8_t> bytes, int64_t page, const PdfRenderRequest& pdf,
                                        MediaIntake& intake, const std::string& name, int64_t width = 0);

}  // namespace qvl
