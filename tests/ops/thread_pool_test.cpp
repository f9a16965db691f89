#include "ops/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace qvl {
namespace {

TEST(ThreadPool, DefaultIsPhysicalCoresAndNeverMoreThanCores) {
  EXPECT_GE(physical_cores(), 1);
  EXPECT_LE(physical_cores(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  ThreadPool def(0);
  EXPECT_EQ(def.size(), physical_cores());
  ThreadPool many(1000);
  EXPECT_EQ(many.size(), physical_cores());
  ThreadPool one(1);
  EXPECT_EQ(one.size(), 1);
}

TEST(ThreadPool, CoversEveryIndexOnceWithContiguousChunks) {
  ThreadPool pool(0);
  for (int64_t n : {1, 2, 3, 7, 64, 1001}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::vector<std::atomic<int>> chunks_per_thread(static_cast<size_t>(pool.size()));
    pool.parallel_for(n, [&](int64_t b, int64_t e, int t) {
      ASSERT_LT(b, e);
      ASSERT_GE(t, 0);
      ASSERT_LT(t, pool.size());
      chunks_per_thread[static_cast<size_t>(t)]++;
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1) << "n=" << n;
    for (auto& c : chunks_per_thread) EXPECT_LE(c.load(), 1);
  }
}

TEST(ThreadPool, ManySmallCallsInARow) {
  ThreadPool pool(0);
  std::atomic<int64_t> total{0};
  for (int call = 0; call < 20000; ++call)
    pool.parallel_for(4, [&](int64_t b, int64_t e, int) { total += e - b; });
  EXPECT_EQ(total.load(), 80000);
}

TEST(ThreadPool, PropagatesExceptionsAndStaysUsable) {
  ThreadPool pool(0);
  EXPECT_THROW(pool.parallel_for(100, [](int64_t b, int64_t, int) {
    if (b == 0) throw std::runtime_error("boom");
  }),
               std::runtime_error);
  std::atomic<int64_t> total{0};
  pool.parallel_for(100, [&](int64_t b, int64_t e, int) { total += e - b; });
  EXPECT_EQ(total.load(), 100);
}

TEST(ThreadPool, WaitsForASlowChunkAndRunsEachChunkOnce) {
  ThreadPool pool(0);
  for (int call = 0; call < 50; ++call) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(pool.size()));
    pool.parallel_for(pool.size(), [&](int64_t b, int64_t, int t) {
      if (b == pool.size() - 1 && call % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      runs[static_cast<size_t>(t)]++;
    });
    for (auto& r : runs) ASSERT_EQ(r.load(), 1);
  }
}

TEST(ThreadPool, EmptyRangeDoesNothing) {
  ThreadPool pool(0);
  bool called = false;
  pool.parallel_for(0, [&](int64_t, int64_t, int) { called = true; });
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace qvl
