// Document search over HTTP, for a server started with --task embed (an
// embedding model): POST /v1/index adds a PDF or an image to a collection
// (one vector per page, search/page_indexer.h), GET /v1/index[?collection=]
// lists what is indexed, DELETE /v1/index/{id} removes a document, POST /v1/search ranks a
// collection's pages against a question ("rerank": K rescores the best K
// with the reranker of --rerank-model, search/page_rerank.h), and GET
// /v1/index/pages/{id}/thumbnail and …/image give a page's thumbnail and the
// page itself (JPEG; the page shows hits with the first and attaches the
// second to a chat).
//
// The index is --index-db (SQLite at STATE_DIR/search.db by default), opened
// at its first use. The engines (the embedding model, and the reranker when
// there is one) run under retrieval_mutex, as the embeddings route's calls
// do: indexing a long PDF holds it for every page.
#include <algorithm>
#include <cctype>
#include <numeric>

#include "image/encode.h"
#include "search/page_indexer.h"
#include "search/page_rerank.h"
#include "search/page_source.h"
#include "search/search_store_open.h"
#include "server/jobs/job_store_open.h"
#include "server/jobs/job_store_postgres.h"
#include "server/media/media.h"
#include "server/requests/chat_request.h"
#include "server/server_core.h"
#include "util/error.h"
#include "util/json_number.h"

namespace qvl {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

constexpr int64_t kMaxTopK = 100;
constexpr int64_t kMaxRerank = 100;  // pages one search rescores with --rerank-model
constexpr int kPageImageQuality = 90;  // a page attached to a chat: read by the model, not only by eyes

void only_fields(const ojson& body, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : body.items())
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
      bad_request(key, cat("unknown field '", key.substr(0, 80), "'; qvl does not honour it"), "unknown_field");
}

std::string string_field(const ojson& body, const char* name, bool required) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) {
    if (required) bad_request(name, cat("'", name, "' is required"), "missing_field");
    return "";
  }
  if (!it->is_string()) bad_request(name, cat("'", name, "' must be a string"), "invalid_type");
  return it->get<std::string>();
}

std::string collection_field(const ojson& body) {
  std::string c = string_field(body, "collection", false);
  if (c.empty() && !body.contains("collection")) return kDefaultCollection;
  if (!valid_collection_name(c))
    bad_request("collection", "'collection' must be 1-64 of A-Z a-z 0-9 . _ -");
  return c;
}

int64_t integer_field(const ojson& body, const char* name, int64_t lo, int64_t hi, int64_t unset) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return unset;
  int64_t x = 0;
  switch (json_integer(*it, lo, hi, x)) {
    case NumberCheck::ok: return x;
    case NumberCheck::not_a_number:
    case NumberCheck::not_an_integer: bad_request(name, cat("'", name, "' must be an integer"), "invalid_type");
    default: bad_request(name, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", it->dump()));
  }
}

// An id in a path: digits only (the router's pattern), within int64.
int64_t path_id(const std::string& s) {
  if (s.size() > 18) return -1;
  return std::stoll(s);
}

// GET /v1/index's query: "collection=NAME" or nothing (a name needs no
// percent-encoding); any other parameter is refused, naming it.
std::string collection_query(const std::string& query) {
  std::string collection;
  size_t at = 0;
  while (at <= query.size()) {
    const size_t end = std::min(query.find('&', at), query.size());
    const std::string part = query.substr(at, end - at);
    at = end + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq);
    if (key != "collection")
      bad_request(key.substr(0, 80), cat("unknown query parameter '", key.substr(0, 80), "'; GET /v1/index takes collection"),
                  "unknown_field");
    collection = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (!valid_collection_name(collection)) bad_request("collection", "'collection' must be 1-64 of A-Z a-z 0-9 . _ -");
  }
  return collection;
}

json document_json(const SearchDocument& d) {
  return {{"object", "qvl.index.document"}, {"id", d.id},       {"collection", d.collection},
          {"filename", d.path},             {"pages", d.pages}, {"bytes", d.size},
          {"sha256", d.sha256},             {"indexed_at", d.indexed_at}};
}

// A store error while serving (a database gone away) is the server's, not the request's.
template <class F>
auto guarded(F&& f) {
  try {
    return f();
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw ApiError(503, "index_unavailable", cat("the search index failed: ", e.what()));
  }
}

// The search routes' handlers. The index is opened at its first use (a
// server of another task never opens it); the engine runs under
// retrieval_mutex, as the embeddings route's calls do.
class SearchRoutes {
 public:
  explicit SearchRoutes(ServerCore& core) : core_(core) {}

  // POST /v1/index: a PDF or an image indexed into a collection, one vector per page.
  void add_document(HttpRequest& req, HttpResponse& res) const;
  // GET /v1/index[?collection=]: the documents indexed, and the collections.
  void list_documents(HttpRequest& req, HttpResponse& res) const;
  // DELETE /v1/index/{id}: a document and its pages removed.
  void remove_document(HttpRequest& req, HttpResponse& res) const;
  // GET /v1/index/pages/{id}/thumbnail: the thumbnail stored with the page.
  void page_thumbnail(HttpRequest& req, HttpResponse& res) const;
  // GET /v1/index/pages/{id}/image: the page rendered again from its document (JPEG).
  void rendered_page(HttpRequest& req, HttpResponse& res) const;
  // POST /v1/search: a collection's pages ranked against a question.
  void search(HttpRequest& req, HttpResponse& res) const;

 private:
  SearchStore& index() const;
  // "rerank": K: the K best hits' pages rendered again as they were
  // indexed (as rendered_page renders them), a few at a time under the memory
  // budget, scored by the reranker and reordered by that score; the top_k
  // best of them kept, their scores in `scores`.
  void rerank_best(std::vector<SearchHit>& hits, std::vector<double>& scores, int64_t k, int64_t top_k,
                   const std::string& query, SearchStore& store) const;
  ServerCore& core_;
};

SearchStore& SearchRoutes::index() const {
  std::lock_guard lock(core_.search_index_mutex);
  if (!core_.search_index) {
    SearchStoreOptions o;
    o.url = core_.options.index_db;
    o.shown = redact_postgres_url(core_.options.index_db);
    if (o.url.empty())
      o.default_path =
          (core_.options.jobs.state_dir.empty() ? default_state_dir() : core_.options.jobs.state_dir) + "/search.db";
    try {
      core_.search_index = open_search_store(o);
    } catch (const Error& e) {
      throw ApiError(503, "index_unavailable", cat("the search index cannot be opened: ", e.what()));
    }
  }
  return *core_.search_index;
}

void SearchRoutes::add_document(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  const ojson body = core_.parse_body(req);
  if (!body.is_object()) bad_request("", "the body must be a JSON object", "invalid_type");
  core_.require_task(ModelTask::Embed);
  only_fields(body, {"file_data", "filename", "collection", "dpi"});
  const std::string data = string_field(body, "file_data", true);
  const std::string filename = string_field(body, "filename", true);
  if (filename.empty() || filename.size() > 255 ||
      std::any_of(filename.begin(), filename.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    bad_request("filename", "'filename' must be 1-255 characters without control characters");
  const std::string collection = collection_field(body);
  IndexOptions io;
  io.collection = collection;
  io.model = core_.model_name;
  if (body.contains("dpi")) {
    const PdfLimits& pdf = core_.chat_limits.media.pdf;
    if (json_double(body["dpi"], pdf.min_dpi, pdf.max_dpi, io.pdf.dpi) != NumberCheck::ok)
      bad_request("dpi", cat("'dpi' must be a number in [", pdf.min_dpi, ", ", pdf.max_dpi, "]"));
  }
  const std::vector<uint8_t> bytes = fetch_media_bytes(data, core_.chat_limits.media, "file_data");
  SearchStore& store = index();
  IndexedFile r;
  guarded([&] {
    // Pages a few at a time (IndexOptions::batch_pages), each admitted by
    // the memory budget as chat's images are (a page that can never fit is
    // chat's 413 image_too_large); each few get the image time limit anew
    // (MediaIntake::next_part), so a long PDF takes as long as its pages.
    std::lock_guard lock(core_.retrieval_mutex);
    MediaIntake intake(indexing_limits(media_limits(core_.chat_limits)), &core_.memory_admission);
    PageIndexer indexer(*core_.engine, store, io);
    try {
      r = indexer.index_bytes(filename, bytes, intake);
    } catch (const ApiError& e) {
      throw ApiError(e.status(), e.code(), e.what(), "file_data");  // the memory budget's, naming the file's field
    } catch (const MediaTimeLimit& e) {
      throw ApiError(413, "file_too_large", e.what(), "file_data");
    } catch (const Error& e) {
      if (std::string(e.what()).rfind("search index", 0) == 0) throw;  // the store's
      throw ApiError(400, "invalid_file", cat("the file cannot be indexed: ", e.what()), "file_data");
    }
    return 0;
  });
  const std::optional<SearchDocument> d = guarded([&] { return store.document(r.document_id); });
  if (!d) throw ApiError(409, "index_changed", "the document was removed while it was being indexed");
  json out = document_json(*d);
  out["outcome"] = outcome_name(r.outcome);
  {
    std::lock_guard lock(rec->mutex);
    rec->fields["pages"] = r.pages;
    rec->fields["outcome"] = outcome_name(r.outcome);
  }
  reply_json(res, 200, out);
}

void SearchRoutes::list_documents(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  core_.require_task(ModelTask::Embed);
  const std::string only = collection_query(req.query);  // empty: every collection's documents
  SearchStore& store = index();
  json docs = json::array(), collections = json::array();
  guarded([&] {
    for (const SearchDocument& d : store.documents(only)) docs.push_back(document_json(d));
    for (const SearchCollection& c : store.collections())
      collections.push_back({{"name", c.name}, {"dimensions", c.dimensions}, {"model", c.model},
                             {"documents", c.documents}, {"pages", c.pages}});
    return 0;
  });
  reply_json(res, 200, {{"object", "list"}, {"data", std::move(docs)}, {"collections", std::move(collections)}});
}

void SearchRoutes::remove_document(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  core_.require_task(ModelTask::Embed);
  const int64_t id = path_id(req.matches[1]);
  SearchStore& store = index();
  if (!guarded([&] { return store.remove(id); }))
    throw ApiError(404, "document_not_found", cat("no indexed document ", id));
  reply_json(res, 200, {{"object", "qvl.index.document.deleted"}, {"id", id}, {"deleted", true}});
}

void SearchRoutes::page_thumbnail(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  core_.require_task(ModelTask::Embed);
  const int64_t id = path_id(req.matches[1]);
  SearchStore& store = index();
  std::optional<std::vector<uint8_t>> jpeg = guarded([&] { return store.thumbnail(id); });
  if (!jpeg) throw ApiError(404, "page_not_found", cat("no indexed page ", id));
  res.status = 200;
  res.set_content(std::string(jpeg->begin(), jpeg->end()), "image/jpeg");
  res.set_header("Cache-Control", "private, max-age=86400");  // a page id is never reused
}

void SearchRoutes::rendered_page(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  core_.require_task(ModelTask::Embed);
  const int64_t id = path_id(req.matches[1]);
  SearchStore& store = index();
  const std::optional<SearchHit> page = guarded([&] { return store.page(id); });
  if (!page) throw ApiError(404, "page_not_found", cat("no indexed page ", id));
  const std::optional<SearchDocument> doc = guarded([&] { return store.document(page->document_id); });
  if (!doc) throw ApiError(404, "page_not_found", cat("no indexed page ", id));
  std::vector<uint8_t> jpeg;
  try {
    MediaIntake intake(indexing_limits(media_limits(core_.chat_limits)), &core_.memory_admission);
    const std::vector<uint8_t> bytes = document_bytes(store, *doc, intake.limits().pdf.max_bytes);
    jpeg = encode_jpeg(*page_image(bytes, page->page, PdfRenderRequest{}, intake, "page", page->width),
                       kPageImageQuality);
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    // A file indexed from disk that moved or changed since.
    throw ApiError(410, "page_gone", cat("the page cannot be rendered again: its document ", doc->id,
                                         " is gone or changed since it was indexed"));
  }
  res.status = 200;
  res.set_content(std::string(jpeg.begin(), jpeg.end()), "image/jpeg");
}

void SearchRoutes::search(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  const ojson body = core_.parse_body(req);
  if (!body.is_object()) bad_request("", "the body must be a JSON object", "invalid_type");
  core_.require_task(ModelTask::Embed);
  only_fields(body, {"query", "collection", "top_k", "rerank"});
  const std::string query = string_field(body, "query", true);
  if (query.empty()) bad_request("query", "'query' is empty: give the question to search for", "empty_input");
  if (query.size() > static_cast<size_t>(core_.chat_limits.max_text_bytes))
    bad_request("query", cat("'query' is over ", core_.chat_limits.max_text_bytes, " bytes"));
  const std::string collection = collection_field(body);
  const int64_t top_k = integer_field(body, "top_k", 1, kMaxTopK, 10);
  const int64_t rerank_k = integer_field(body, "rerank", 1, kMaxRerank, 0);
  if (rerank_k > 0 && !core_.reranker)
    bad_request("rerank", "this server has no reranker model: start it with --rerank-model DIR (a Qwen3-VL-Reranker) "
                          "beside the embedding model to rerank, or use `qvl search --rerank K --rerank-model DIR`");
  SearchStore& store = index();
  std::optional<SearchCollection> c;
  guarded([&] {
    for (const SearchCollection& x : store.collections())
      if (x.name == collection) c = x;
    return 0;
  });
  if (!c) throw ApiError(404, "collection_not_found", cat("no collection '", collection, "' in the index"), "collection");
  if (c->dimensions > core_.engine->info().hidden_size)
    bad_request("collection", cat("collection '", collection, "' holds vectors of ", c->dimensions,
                                  " dimensions, more than this model's ", core_.engine->info().hidden_size,
                                  ": it was filled by another model (", c->model, ")"));
  std::vector<float> q;
  {
    std::lock_guard lock(core_.retrieval_mutex);
    try {
      q = embed_query(*core_.engine, query, c->dimensions);
    } catch (const Error& e) {
      throw ApiError(400, "invalid_input", e.what(), "query");
    }
  }
  std::vector<SearchHit> hits = guarded([&] { return store.search(collection, q, std::max(top_k, rerank_k)); });
  std::vector<double> rerank_scores;
  if (rerank_k > 0) rerank_best(hits, rerank_scores, rerank_k, top_k, query, store);
  json data = json::array();
  for (size_t i = 0; i < hits.size(); ++i) {
    const SearchHit& h = hits[i];
    data.push_back({{"object", "qvl.search.page"},
                    {"rank", i + 1},
                    {"score", h.score},
                    {"page_id", h.page_id},
                    {"document_id", h.document_id},
                    {"filename", h.path},
                    {"page", h.page},
                    {"thumbnail_url", cat("/v1/index/pages/", h.page_id, "/thumbnail")},
                    {"image_url", cat("/v1/index/pages/", h.page_id, "/image")}});
    if (rerank_k > 0) data.back()["rerank_score"] = rerank_scores[i];
  }
  {
    std::lock_guard lock(rec->mutex);
    rec->fields["results"] = hits.size();
    if (rerank_k > 0) rec->fields["reranked"] = rerank_k;
  }
  reply_json(res, 200, {{"object", "list"}, {"query", query}, {"collection", collection}, {"data", std::move(data)}});
}

void SearchRoutes::rerank_best(std::vector<SearchHit>& hits, std::vector<double>& scores, int64_t k, int64_t top_k,
                               const std::string& query, SearchStore& store) const {
  hits.resize(std::min(hits.size(), static_cast<size_t>(k)));
  std::vector<double> s;
  try {
    MediaIntake intake(indexing_limits(media_limits(core_.chat_limits)), &core_.memory_admission);
    s = rerank_hits(*core_.reranker, core_.retrieval_mutex, query, hits, store, PdfRenderRequest{}, intake);
  } catch (const ApiError& e) {
    throw ApiError(e.status(), e.code(), e.what(), "rerank");  // the memory budget's: the pages are rerank's
  } catch (const MediaTimeLimit& e) {
    refuse_time_limit(e, "rerank");
  } catch (const PageUnavailable& e) {
    throw ApiError(410, "page_gone", cat("a page cannot be rendered again for reranking: ", e.what()), "rerank");
  } catch (const Error& e) {
    throw ApiError(400, "invalid_input", e.what(), "query");  // the reranker's refusal of the prompt
  }
  std::vector<size_t> order(hits.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
  order.resize(std::min(order.size(), static_cast<size_t>(top_k)));
  std::vector<SearchHit> kept;
  scores.clear();
  for (size_t i : order) kept.push_back(hits[i]), scores.push_back(s[i]);
  hits = std::move(kept);
}

}  // namespace

void ServerCore::register_search_routes(HttpRouter& router) {
  const SearchRoutes routes(*this);
  router.post("/v1/index", [routes](HttpRequest& req, HttpResponse& res) { routes.add_document(req, res); });
  router.get("/v1/index", [routes](HttpRequest& req, HttpResponse& res) { routes.list_documents(req, res); });
  router.del(R"(/v1/index/([0-9]{1,18}))",
             [routes](HttpRequest& req, HttpResponse& res) { routes.remove_document(req, res); });
  router.get(R"(/v1/index/pages/([0-9]{1,18})/thumbnail)",
             [routes](HttpRequest& req, HttpResponse& res) { routes.page_thumbnail(req, res); });
  router.get(R"(/v1/index/pages/([0-9]{1,18})/image)",
             [routes](HttpRequest& req, HttpResponse& res) { routes.rendered_page(req, res); });
  router.post("/v1/search", [routes](HttpRequest& req, HttpResponse& res) { routes.search(req, res); });
}

}  // namespace qvl
