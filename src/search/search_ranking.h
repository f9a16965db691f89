// The k best of a collection's scores, as both stores return them: highest
// score first, ties to the lower (older) page id.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace qvl {

// Indexes of the k best entries of scores (ids[i] the page id of scores[i]).
inline std::vector<size_t> best_k(const std::vector<float>& scores, const std::vector<int64_t>& ids, int64_t k) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t n = std::min<size_t>(order.size(), static_cast<size_t>(std::max<int64_t>(k, 0)));
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](size_t a, size_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : ids[a] < ids[b];
  });
  order.resize(n);
  return order;
}

}  // namespace qvl
