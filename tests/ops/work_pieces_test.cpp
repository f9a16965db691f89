#include "ops/work_pieces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdint>
#include <vector>

namespace qvl {
namespace {

// Pieces cover every unit of every product exactly once, product by product
// in order, never span two products, are within one unit of each other's size
// inside a product, and number about kWorkPiecesPerThread per thread.
TEST(WorkPieces, CoverEveryUnitOnceInOrderInEvenPieces) {
  const std::vector<std::vector<int64_t>> cases = {
      {128}, {128, 64, 64}, {384, 384}, {1}, {0, 5, 0}, {3, 1000, 7}, {9497}, {}};
  for (int threads : {1, 2, 3, 8})
    for (const auto& units : cases) {
      const std::vector<WorkPiece> pieces = split_work(units, threads);
      int64_t total = 0;
      for (int64_t u : units) total += u;
      size_t at = 0;
      for (size_t i = 0; i < units.size(); ++i) {
        int64_t next = 0, smallest = INT64_MAX, largest = 0;
        for (; at < pieces.size() && pieces[at].product == static_cast<int>(i); ++at) {
          EXPECT_EQ(pieces[at].begin, next) << "product " << i << " threads " << threads;
          EXPECT_LT(pieces[at].begin, pieces[at].end);
          smallest = std::min(smallest, pieces[at].end - pieces[at].begin);
          largest = std::max(largest, pieces[at].end - pieces[at].begin);
          next = pieces[at].end;
        }
        EXPECT_EQ(next, units[i]) << "product " << i << " threads " << threads;
        if (largest > 0) {
          EXPECT_LE(largest - smallest, 1);
        }
      }
      EXPECT_EQ(at, pieces.size()) << "pieces out of product order";
      const int64_t target = int64_t{threads} * kWorkPiecesPerThread;
      EXPECT_LE(static_cast<int64_t>(pieces.size()), std::min(total, target) + static_cast<int64_t>(units.size()));
      if (total >= target) {
        EXPECT_GE(static_cast<int64_t>(pieces.size()), target / 2);
      }
    }
}

TEST(WorkPieces, RunEveryPieceExactlyOnceOnAnyPool) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    const std::vector<int64_t> units = {100, 3, 250};
    const std::vector<WorkPiece> pieces = split_work(units, pool.size());
    for (int round = 0; round < 200; ++round) {
      std::vector<std::atomic<int>> hits(353);
      run_pieces(pool, pieces, [&](const WorkPiece& p) {
        const int64_t base = p.product == 0 ? 0 : p.product == 1 ? 100 : 103;
        for (int64_t u = p.begin; u < p.end; ++u) hits[static_cast<size_t>(base + u)]++;
      });
      for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "unit " << i << " round " << round;
    }
  }
}

// A thread whose own pieces run slow gets help from the back of its run: the
// other thread takes a suffix of it, and the owner a prefix, each piece once.
TEST(WorkPieces, AThreadOutOfWorkTakesFromTheBackOfASlowOnesRun) {
  ThreadPool pool(2);
  if (pool.size() < 2) GTEST_SKIP() << "needs two cores";
  const std::vector<int64_t> units = {64};
  const std::vector<WorkPiece> pieces = split_work(units, pool.size());
  const size_t half = pieces.size() / 2;  // run 0: pieces [0, half)
  std::vector<std::thread::id> by(pieces.size());
  std::vector<std::atomic<int>> hits(pieces.size());
  run_pieces(pool, pieces, [&](const WorkPiece& p) {
    const size_t i = static_cast<size_t>(&p - pieces.data());
    by[i] = std::this_thread::get_id();
    hits[i]++;
    if (i < half) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  // Run 0 as owner-prefix then helper-suffix: the thread changes once at most.
  size_t changes = 0;
  for (size_t i = 1; i < half; ++i) changes += by[i] != by[i - 1];
  EXPECT_EQ(changes, 1u) << "run 0 was not shared as a prefix and a suffix";
  EXPECT_NE(by[0], by[half - 1]);
}

}  // namespace
}  // namespace qvl
