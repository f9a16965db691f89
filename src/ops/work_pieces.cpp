#include "ops/work_pieces.h"

#include <algorithm>
#include <atomic>

namespace qvl {

std::vector<WorkPiece> split_work(std::span<const int64_t> units, int threads) {
  int64_t total = 0;
  for (int64_t u : units) total += u;
  std::vector<WorkPiece> pieces;
  if (total <= 0) return pieces;
  const int64_t target = std::max<int64_t>(1, int64_t{std::max(threads, 1)} * kWorkPiecesPerThread);
  const int64_t size = std::max<int64_t>(1, (total + target - 1) / target);
  for (size_t i = 0; i < units.size(); ++i) {
    const int64_t n = (units[i] + size - 1) / size;  // this product's pieces, of equal size
    for (int64_t p = 0; p < n; ++p)
      pieces.push_back({static_cast<int>(i), p * units[i] / n, (p + 1) * units[i] / n});
  }
  return pieces;
}

void run_pieces(ThreadPool& pool, std::span<const WorkPiece> pieces, const std::function<void(const WorkPiece&)>& fn) {
  const int64_t count = static_cast<int64_t>(pieces.size());
  if (count == 0) return;
  std::atomic<int64_t> next{0};
  pool.parallel_for(std::min<int64_t>(count, pool.size()), [&](int64_t, int64_t, int) {
    for (int64_t p; (p = next.fetch_add(1, std::memory_order_relaxed)) < count;) fn(pieces[static_cast<size_t>(p)]);
  });
}

}  // namespace qvl
