// qvl search: the pages of a collection nearest to a question, by the
// embedding model's vectors (search/search_store.h), optionally the best K
// rescored by a reranker model and reordered. JSON on stdout, or a table when
// stdout is a terminal.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/retrieval_inputs.h"
#include "cli/search_index.h"
#include "engine/retrieval.h"
#include "search/page_indexer.h"
#include "search/page_rerank.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct Ranked {
  SearchHit hit;
  std::optional<double> rerank_score;
};

// The reranker's scores of the hits' pages against the query, each page
// rendered again from its document (search/page_rerank.h).
std::vector<double> rerank_pages(const std::string& model_dir, const EngineParams& requested, const std::string& query,
                                 const std::vector<SearchHit>& hits, SearchStore& store, const PdfRenderRequest& pdf) {
  ModelChoice choice;
  choice.model = model_dir;
  EngineParams params = engine_params(choice, requested);
  require_task(ModelTask::Rerank, std::nullopt, params.model_dir);
  MediaIntake intake{indexing_limits(MediaLimits{})};
  const std::vector<RetrievalInput> docs = page_documents(store, hits, pdf, intake);
  std::unique_ptr<Engine> engine = Engine::create(params);
  return rerank_scores(*engine, query, docs);
}

void print_table(const std::vector<Ranked>& ranked) {
  std::printf("%4s  %8s  %8s  %5s  %s\n", "rank", "score", "rerank", "page", "document");
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Ranked& r = ranked[i];
    const std::string rerank = r.rerank_score ? cat(std::to_string(*r.rerank_score).substr(0, 8)) : "-";
    std::printf("%4zu  %8.4f  %8s  %5lld  %s\n", i + 1, static_cast<double>(r.hit.score), rerank.c_str(),
                static_cast<long long>(r.hit.page), r.hit.path.c_str());
  }
}

}  // namespace

int cmd_search(int argc, char** argv) {
  Args args("search", "\"QUESTION\" --model M [--collection NAME] [--top K] [--rerank K --rerank-model DIR]",
            "Finds the pages of a collection (filled by `qvl index`) nearest to a question by the embedding model's\n"
            "vectors. With --rerank K the best K by vector are scored again by a Qwen3-VL-Reranker model and\n"
            "reordered. Prints JSON (a table when stdout is a terminal, unless --output-format json).");
  ModelChoice model;
  EngineParams requested;
  std::optional<ModelTask> task;
  SearchIndexChoice index;
  PdfRenderRequest pdf;
  int64_t top = 10, rerank_k = 0;
  std::string rerank_model, instruction, format;
  visit_options(model, args);
  visit_task(task, args);
  visit_options(requested, args);
  visit_options(index, args);
  args(top, "top", "K", "pages to print").range(1, 10000);
  args(rerank_k, "rerank", "K", "rescore the best K pages by vector with --rerank-model, then print the best --top")
      .range(1, 1000)
      .unset("no reranking");
  args(rerank_model, "rerank-model", "DIR", "a Qwen3-VL-Reranker model folder or repo id (for --rerank)");
  args(instruction, "instruction", "TEXT", "the query's instruction to the embedding model")
      .unset(kSearchQueryInstruction);
  args(pdf.dpi, "dpi", "DPI", "resolution pages are rendered at for the reranker (as they were indexed)")
      .range(PdfLimits{}.min_dpi, PdfLimits{}.max_dpi);
  args(format, "output-format", "FORMAT", "json or table").choices({"json", "table"}).unset("table on a terminal, else json");
  if (!args.parse(argc, argv)) return 0;
  refuse_chat_pixel_options(args, "search");
  if (args.positional().size() != 1)
    throw UsageError("search: give the question as one argument, in quotes (see qvl search --help)");
  if (rerank_k > 0 && rerank_model.empty()) throw UsageError("search: --rerank needs --rerank-model DIR (a Qwen3-VL-Reranker)");
  if (rerank_k == 0 && !rerank_model.empty()) throw UsageError("search: --rerank-model is used with --rerank K");
  const std::string query = args.positional()[0];

  std::unique_ptr<SearchStore> store = open_index(index);
  std::optional<SearchCollection> collection;
  for (const SearchCollection& c : store->collections())
    if (c.name == index.collection) collection = c;
  if (!collection) fail("no collection '", index.collection, "' in the index (qvl index --collection ", index.collection, " FILES)");

  EngineParams params = engine_params(model, requested);
  require_task(ModelTask::Embed, task, params.model_dir);
  std::vector<float> q;
  {
    std::unique_ptr<Engine> engine = Engine::create(params);
    if (collection->dimensions > engine->info().hidden_size)
      fail("collection '", index.collection, "' holds vectors of ", collection->dimensions,
           " dimensions, more than this model's ", engine->info().hidden_size, ": search it with the model that filled it (",
           collection->model, ")");
    q = embed_query(*engine, query, collection->dimensions,
                    args.has("instruction") ? std::optional<std::string>(instruction) : std::nullopt);
  }  // the embedding model goes before a reranker loads
  std::vector<SearchHit> hits = store->search(index.collection, q, std::max(top, rerank_k));
  std::vector<Ranked> ranked;
  if (rerank_k > 0) {
    hits.resize(std::min<size_t>(hits.size(), static_cast<size_t>(rerank_k)));
    const std::vector<double> scores = rerank_pages(rerank_model, requested, query, hits, *store, pdf);
    for (size_t i = 0; i < hits.size(); ++i) ranked.push_back({hits[i], scores[i]});
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Ranked& a, const Ranked& b) { return *a.rerank_score > *b.rerank_score; });
  } else {
    for (SearchHit& h : hits) ranked.push_back({std::move(h), std::nullopt});
  }
  if (static_cast<int64_t>(ranked.size()) > top) ranked.resize(static_cast<size_t>(top));

  const bool table = format.empty() ? isatty(STDOUT_FILENO) : format == "table";
  if (table) {
    print_table(ranked);
  } else {
    ojson out = {{"query", query}, {"collection", index.collection}, {"index", store->name()}, {"results", ojson::array()}};
    for (size_t i = 0; i < ranked.size(); ++i) {
      const Ranked& r = ranked[i];
      ojson item = {{"rank", i + 1},      {"score", r.hit.score},         {"path", r.hit.path},
                    {"page", r.hit.page}, {"page_id", r.hit.page_id}, {"document_id", r.hit.document_id}};
      if (r.rerank_score) item["rerank_score"] = *r.rerank_score;
      out["results"].push_back(std::move(item));
    }
    std::cout << out.dump() << "\n";
  }
  std::cout.flush();
  if (!std::cout) fail("cannot write to stdout");
  return 0;
}

}  // namespace qvl::cli
