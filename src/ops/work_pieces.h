// Decode's products split into pieces that the threads share out as they go,
// instead of one fixed share per thread. On a shared machine the threads do
// not run at one speed (a vCPU loses its core for a while, another tenant
// takes memory bandwidth), and with fixed shares every product ended with the
// fast thread waiting for the slow one. In q4 decode on a 2-vCPU VM (perf,
// issue 15 item 4) the thread pool's waits took 13-16 % of the samples with
// fixed shares, 9-10 % with 4 pieces per thread, 6-8 % with 16 (32: about the
// same as 16). A piece of the 2B model's smallest q4 product is still 74 KB.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ops/thread_pool.h"

namespace qvl {

// Units [begin, end) of product `product`.
struct WorkPiece {
  int product;
  int64_t begin, end;
};

// Cuts products of units[i] units each (units of equal cost) into pieces of
// nearly equal size, about kWorkPiecesPerThread per thread over them all;
// a piece never spans two products. Pieces come product by product, in order.
constexpr int kWorkPiecesPerThread = 16;
std::vector<WorkPiece> split_work(std::span<const int64_t> units, int threads);

// Runs fn(piece) for every piece, each once, on the pool's threads: each
// thread takes the pieces of its own contiguous run in order, then helps the
// others from the back of theirs.
void run_pieces(ThreadPool& pool, std::span<const WorkPiece> pieces, const std::function<void(const WorkPiece&)>& fn);

}  // namespace qvl
