// qvl index: adds PDFs and images to a collection of the search index, one
// vector per page (search/page_indexer.h), and prints one JSON object saying
// what became of each file. Folders are walked for PDFs and images; a file
// already indexed and unchanged is skipped; a changed one replaces its
// pages. --delete removes files' pages, --list shows what is indexed.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/retrieval_inputs.h"
#include "cli/search_index.h"
#include "search/page_indexer.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// What a folder walk takes: PDFs and the image formats qvl decodes.
bool indexable_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* e : {".pdf", ".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"})
    if (ext == e) return true;
  return false;
}

// The files named and the indexable files under the folders named, each
// folder's in path order.
std::vector<std::string> files_of(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(a, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && indexable_name(it->path())) found.push_back(it->path().string());
      if (ec) fail("cannot walk ", a, ": ", ec.message());
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(a, ec)) {
      out.push_back(a);
    } else {
      fail(a, ": no such file or folder");
    }
  }
  return out;
}

ojson document_json(const SearchDocument& d) {
  return {{"id", d.id},       {"collection", d.collection}, {"path", d.path},         {"pages", d.pages},
          {"size", d.size},   {"sha256", d.sha256},         {"indexed_at", d.indexed_at}};
}

void print(const ojson& out) {
  std::cout << out.dump() << "\n";
  std::cout.flush();
  if (!std::cout) fail("cannot write to stdout");
}

}  // namespace

int cmd_index(int argc, char** argv) {
  Args args("index", "--model M [--collection NAME] FILE|FOLDER ...   |   --delete FILE ...   |   --list",
            "Adds PDFs and images to a collection of the search index: one vector per page (a Qwen3-VL-Embedding\n"
            "model), with the page's thumbnail and its source. Folders are walked for .pdf, .png, .jpg, .jpeg,\n"
            ".webp, .gif and .bmp files. A file indexed before is skipped when unchanged (its size and time, or\n"
            "its bytes) and its pages replaced when changed. Prints one JSON object; `qvl search` queries it.");
  ModelChoice model;
  EngineParams requested;
  std::optional<ModelTask> task;
  SearchIndexChoice index;
  PdfRenderRequest pdf;
  int64_t dimensions = 0;
  bool remove = false, list = false;
  visit_options(model, args);
  visit_task(task, args);
  visit_options(requested, args);
  visit_options(index, args);
  args(pdf.dpi, "dpi", "DPI", "resolution PDF pages are rendered at for the model")
      .range(PdfLimits{}.min_dpi, PdfLimits{}.max_dpi);
  args(dimensions, "dimensions", "N", "keep the first N components of each vector (MRL); a collection keeps one size")
      .range(1, 1 << 20)
      .unset("the model's hidden size");
  args(remove, "delete", "remove the files' pages from the collection instead of adding them");
  args(list, "list", "print the collections and the documents of --collection (all of them if not given)");
  if (!args.parse(argc, argv)) return 0;
  refuse_chat_pixel_options(args, "index");

  if (list) {
    std::unique_ptr<SearchStore> store = open_index(index);
    ojson out;
    out["collections"] = ojson::array();
    for (const SearchCollection& c : store->collections())
      out["collections"].push_back({{"name", c.name}, {"dimensions", c.dimensions}, {"model", c.model},
                                    {"documents", c.documents}, {"pages", c.pages}});
    out["documents"] = ojson::array();
    for (const SearchDocument& d : store->documents(args.has("collection") ? index.collection : ""))
      out["documents"].push_back(document_json(d));
    print(out);
    return 0;
  }
  if (args.positional().empty())
    throw UsageError(cat("index: name the files or folders to ", remove ? "remove" : "index", " (see qvl index --help)"));

  if (remove) {
    std::unique_ptr<SearchStore> store = open_index(index);
    ojson out = {{"collection", index.collection}, {"removed", ojson::array()}};
    bool missing = false;
    for (const std::string& p : args.positional()) {
      const std::string absolute = fs::absolute(p).lexically_normal().string();
      std::optional<SearchDocument> d = store->find(index.collection, absolute);
      if (!d) {
        std::cerr << "qvl index: " << absolute << " is not in collection '" << index.collection << "'\n";
        missing = true;
        continue;
      }
      store->remove(d->id);
      out["removed"].push_back({{"path", absolute}, {"pages", d->pages}});
    }
    print(out);
    return missing ? 1 : 0;
  }

  const std::vector<std::string> files = files_of(args.positional());
  EngineParams params = engine_params(model, requested);
  require_task(ModelTask::Embed, task, params.model_dir);
  std::unique_ptr<SearchStore> store = open_index(index);
  std::unique_ptr<Engine> engine = Engine::create(params);
  IndexOptions io;
  io.collection = index.collection;
  io.model = params.model_dir;
  io.pdf = pdf;
  io.dimensions = dimensions;
  PageIndexer indexer(*engine, *store, io);
  MediaIntake intake{indexing_limits(MediaLimits{})};
  ojson out = {{"collection", index.collection}, {"index", store->name()}, {"files", ojson::array()}};
  int64_t added = 0, replaced = 0, unchanged = 0, failed = 0, pages = 0;
  for (const std::string& f : files) {
    try {
      const IndexedFile r = indexer.index_file(f, intake);
      out["files"].push_back({{"path", r.path}, {"outcome", outcome_name(r.outcome)}, {"pages", r.pages},
                              {"document_id", r.document_id}});
      (r.outcome == IndexOutcome::Added ? added : r.outcome == IndexOutcome::Replaced ? replaced : unchanged) += 1;
      if (r.outcome != IndexOutcome::Unchanged) pages += r.pages;
      std::cerr << "qvl index: " << r.path << ": " << outcome_name(r.outcome) << " (" << r.pages << " pages)\n";
    } catch (const Error& e) {
      ++failed;
      out["files"].push_back({{"path", f}, {"outcome", "failed"}, {"error", e.what()}});
      std::cerr << "qvl index: " << e.what() << "\n";
    }
  }
  out["added"] = added;
  out["replaced"] = replaced;
  out["unchanged"] = unchanged;
  out["failed"] = failed;
  out["pages_embedded"] = pages;
  print(out);
  return failed ? 1 : 0;
}

}  // namespace qvl::cli
