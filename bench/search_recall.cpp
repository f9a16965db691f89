// The search index's figures (issue 47, item 4): a collection filled with
// random unit vectors (10,000 of 2048 dimensions, the 2B embedding's size by
// default), then for each store the latency of a search (p50, p99 over the
// queries) and its recall@k against exact search (brute force in double
// precision over the same vectors). SQLite is exact by construction (its
// recall is printed as a check); pgvector's HNSW is measured at several
// hnsw.ef_search values. Two kinds of query: uniformly random unit vectors
// (the test: their nearest pages are barely nearer than any other,
// HNSW's hardest case) and "near" ones, a stored vector plus noise, as a
// question close to some pages is.
//
//   build/bench/search_recall [--pages 10000] [--dim 2048] [--queries 200] [--k 10]
//       [--sqlite /tmp/search_recall.db] [--pg postgresql://USER@HOST/DB] [--ef 40,100,200]
//
// Prints one JSON object. Fills its own collection ("search_recall") and
// empties it first; the SQLite file is removed at the end.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "search/search_store_open.h"
#include "util/error.h"

namespace {

using qvl::SearchHit;
using qvl::SearchStore;
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr const char* kCollection = "search_recall";
constexpr int kPagesPerDocument = 100;

std::vector<float> unit(std::vector<float> v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

std::vector<float> random_unit(std::mt19937& rng, int dim) {
  std::normal_distribution<float> n(0, 1);
  std::vector<float> v(dim);
  for (float& x : v) x = n(rng);
  return unit(std::move(v));
}

// The exact k best page numbers (0-based, in fill order) for q.
std::vector<int> exact_top(const std::vector<std::vector<float>>& pages, const std::vector<float>& q, int k) {
  std::vector<std::pair<double, int>> s(pages.size());
  for (size_t i = 0; i < pages.size(); ++i) {
    double d = 0;
    for (size_t j = 0; j < q.size(); ++j) d += double(pages[i][j]) * q[j];
    s[i] = {-d, static_cast<int>(i)};
  }
  std::partial_sort(s.begin(), s.begin() + k, s.end());
  std::vector<int> out;
  for (int i = 0; i < k; ++i) out.push_back(s[i].second);
  return out;
}

void fill(SearchStore& store, const std::vector<std::vector<float>>& pages) {
  for (const qvl::SearchDocument& d : store.documents(kCollection)) store.remove(d.id);
  for (size_t first = 0; first < pages.size(); first += kPagesPerDocument) {
    qvl::SearchDocument doc;
    doc.collection = kCollection;
    doc.path = "doc" + std::to_string(first / kPagesPerDocument);
    doc.sha256 = doc.path;
    std::vector<qvl::SearchPage> ps;
    for (size_t i = first; i < std::min(pages.size(), first + kPagesPerDocument); ++i) {
      qvl::SearchPage p;
      p.page = static_cast<int64_t>(i - first + 1);
      p.vector = pages[i];
      ps.push_back(std::move(p));
    }
    store.put(doc, ps, {}, "random");
  }
}

struct Measured {
  double recall = 0, p50_ms = 0, p99_ms = 0;
};

Measured measure(SearchStore& store, const std::vector<std::vector<float>>& queries,
                 const std::vector<std::vector<int>>& truth, int k) {
  store.search(kCollection, queries[0], k);  // the first search loads (SQLite) or warms (pgvector) the collection
  std::vector<double> ms;
  double found = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    const auto t0 = Clock::now();
    const std::vector<SearchHit> hits = store.search(kCollection, queries[i], k);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    std::set<int> want(truth[i].begin(), truth[i].end());
    for (const SearchHit& h : hits) {
      const int index = std::stoi(h.path.substr(3)) * kPagesPerDocument + static_cast<int>(h.page) - 1;
      found += want.count(index);
    }
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))]; };
  return {found / (static_cast<double>(k) * queries.size()), pct(0.50), pct(0.99)};
}

}  // namespace

int main(int argc, char** argv) {
  int pages_n = 10000, dim = 2048, queries_n = 200, k = 10;
  std::string sqlite = (std::filesystem::temp_directory_path() / "search_recall.db").string(), pg;
  std::vector<int> efs = {40, 100, 200};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--pages") pages_n = std::stoi(v), ++i;
    else if (a == "--dim") dim = std::stoi(v), ++i;
    else if (a == "--queries") queries_n = std::stoi(v), ++i;
    else if (a == "--k") k = std::stoi(v), ++i;
    else if (a == "--sqlite") sqlite = v, ++i;
    else if (a == "--pg") pg = v, ++i;
    else if (a == "--ef") {
      efs.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) efs.push_back(std::stoi(x));
      ++i;
    } else {
      std::cerr << "usage: search_recall [--pages N] [--dim D] [--queries Q] [--k K] [--sqlite PATH] [--pg URL] "
                   "[--ef 40,100,200]\n";
      return 2;
    }
  }
  if (pages_n < k || queries_n < 1) {
    std::cerr << "search_recall: --pages must be at least --k, --queries at least 1\n";
    return 2;
  }
  try {
    std::mt19937 rng(2026);
    std::vector<std::vector<float>> pages;
    for (int i = 0; i < pages_n; ++i) pages.push_back(random_unit(rng, dim));
    // Query sets: random, and near a stored page (noise of the same norm as the page).
    std::vector<std::pair<std::string, std::vector<std::vector<float>>>> sets = {{"random", {}}, {"near", {}}};
    std::uniform_int_distribution<int> pick(0, pages_n - 1);
    for (int i = 0; i < queries_n; ++i) {
      sets[0].second.push_back(random_unit(rng, dim));
      std::vector<float> q = pages[pick(rng)];
      const std::vector<float> noise = random_unit(rng, dim);
      for (int j = 0; j < dim; ++j) q[j] += noise[j];
      sets[1].second.push_back(unit(std::move(q)));
    }
    std::vector<std::vector<std::vector<int>>> truth;
    for (const auto& [name, qs] : sets) {
      truth.emplace_back();
      for (const auto& q : qs) truth.back().push_back(exact_top(pages, q, k));
    }

    json out = {{"pages", pages_n}, {"dimensions", dim}, {"queries", queries_n}, {"k", k}};
    {
      std::filesystem::remove(sqlite);
      std::unique_ptr<SearchStore> store = qvl::open_search_store({"sqlite:" + sqlite, "", "", 0});
      fill(*store, pages);
      json s = json::object();
      for (size_t i = 0; i < sets.size(); ++i) {
        const Measured m = measure(*store, sets[i].second, truth[i], k);
        s[sets[i].first] = {{"recall_at_k", m.recall}, {"p50_ms", m.p50_ms}, {"p99_ms", m.p99_ms}};
      }
      out["sqlite"] = s;
      store.reset();
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(sqlite + suffix);
    }
    if (!pg.empty()) {
      {
        std::unique_ptr<SearchStore> store = qvl::open_search_store({pg, "", "", efs.empty() ? 40 : efs[0]});
        const auto t0 = Clock::now();
        fill(*store, pages);
        out["pgvector_fill_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
      }
      json runs = json::array();
      for (int ef : efs) {
        std::unique_ptr<SearchStore> store = qvl::open_search_store({pg, "", "", ef});
        json r = {{"ef_search", ef}};
        for (size_t i = 0; i < sets.size(); ++i) {
          const Measured m = measure(*store, sets[i].second, truth[i], k);
          r[sets[i].first] = {{"recall_at_k", m.recall}, {"p50_ms", m.p50_ms}, {"p99_ms", m.p99_ms}};
        }
        runs.push_back(r);
      }
      out["pgvector"] = runs;
    } else {
      out["pgvector"] = "not measured: give --pg postgresql://… (a server with pgvector)";
    }
    std::cout << out.dump(2) << "\n";
  } catch (const qvl::Error& e) {
    std::cerr << "search_recall: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
