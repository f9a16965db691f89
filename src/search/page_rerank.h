// Reranking a search's best pages: each page rendered again from its
// document (page_source.h) and scored against the question by a
// Qwen3-VL-Reranker model, as `qvl rerank` and POST /v1/rerank score a
// (query text, page image) pair (engine/retrieval.h). The CLI (qvl search
// --rerank) and the server (POST /v1/search with "rerank") both call these;
// the server renders a few pages at a time outside its engine lock.
#pragma once

#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/retrieval.h"
#include "media/intake.h"
#include "pdf/pdf_pages.h"
#include "search/search_store.h"
#include "util/error.h"

namespace qvl {

// The hits' pages as reranker documents (one image each), rendered at
// `pdf`'s dpi under `intake`'s limits. Throws Error naming the file when its
// document is gone or changed since it was indexed.
std::vector<RetrievalInput> page_documents(SearchStore& store, std::span<const SearchHit> hits,
                                           const PdfRenderRequest& pdf, MediaIntake& intake);

// Each document's reranker score (sigmoid of the yes/no logit difference)
// against the text `query`, with the reranker's default instruction.
std::vector<double> rerank_scores(Engine& reranker, const std::string& query, const std::vector<RetrievalInput>& documents);

// A hit's page that cannot be rendered again (rerank_hits): its document is
// gone or changed since it was indexed, or cannot be rendered any more.
class PageUnavailable : public Error {
 public:
  using Error::Error;
};

// Both for many pages, `batch` at a time so only those are held rendered:
// each batch rendered outside `engine_lock`, scored under it, then dropped
// (MediaIntake::next_part). Scores in the hits' order. Rendering errors are
// PageUnavailable; the intake's admission refusals and MediaTimeLimit pass
// through as they are, as do the engine's errors.
std::vector<double> rerank_hits(Engine& reranker, std::mutex& engine_lock, const std::string& query,
                                std::span<const SearchHit> hits, SearchStore& store, const PdfRenderRequest& pdf,
                                MediaIntake& intake, size_t batch = 4);

}  // namespace qvl
