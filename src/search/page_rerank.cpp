#include "search/page_rerank.h"

#include <algorithm>

#include "search/page_source.h"
#include "util/error.h"

namespace qvl {

std::vector<RetrievalInput> page_documents(SearchStore& store, std::span<const SearchHit> hits,
                                           const PdfRenderRequest& pdf, MediaIntake& intake) {
  std::vector<RetrievalInput> docs;
  docs.reserve(hits.size());
  for (const SearchHit& h : hits) {
    const std::optional<SearchDocument> doc = store.document(h.document_id);
    if (!doc) fail("page ", h.page_id, " was removed while searching");
    const std::vector<uint8_t> bytes = document_bytes(store, *doc, intake.limits().pdf.max_bytes);
    RetrievalInput d;
    d.images.push_back(page_image(bytes, h.page, pdf, intake, doc->path, h.width));
    docs.push_back(std::move(d));
  }
  return docs;
}

std::vector<double> rerank_scores(Engine& reranker, const std::string& query, const std::vector<RetrievalInput>& documents) {
  RetrievalInput q;
  q.texts.push_back(query);
  const RerankResult r = rerank(reranker, q, documents, {});
  std::vector<double> out;
  out.reserve(r.scores.size());
  for (const RerankScore& s : r.scores) out.push_back(s.score);
  return out;
}

std::vector<double> rerank_hits(Engine& reranker, std::mutex& engine_lock, const std::string& query,
                                std::span<const SearchHit> hits, SearchStore& store, const PdfRenderRequest& pdf,
                                MediaIntake& intake, size_t batch) {
  batch = std::max<size_t>(batch, 1);
  std::vector<double> scores;
  scores.reserve(hits.size());
  for (size_t at = 0; at < hits.size(); at += batch) {
    std::vector<double> part;
    {
      std::vector<RetrievalInput> docs;
      try {
        docs = page_documents(store, hits.subspan(at, std::min(batch, hits.size() - at)), pdf, intake);
      } catch (const MediaTimeLimit&) {
        throw;
      } catch (const Error& e) {
        throw PageUnavailable(e.what());
      }
      std::lock_guard lock(engine_lock);
      part = rerank_scores(reranker, query, docs);
    }  // the batch's pages are dropped here
    scores.insert(scores.end(), part.begin(), part.end());
    intake.next_part();
  }
  return scores;
}

}  // namespace qvl
