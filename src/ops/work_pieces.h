// Decode's products split into pieces that threads claim one after another,
// instead of one fixed share per thread. On a shared machine the threads do
// not run at one speed (a vCPU loses its core for a while, another tenant
// takes memory bandwidth), and with fixed shares every product ended with the
// fast thread waiting for the slow one: 14 % of q4 decode's samples were
// spent in those waits on a 2-vCPU VM, 9 % with pieces (perf, issue 15 item 4).
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
constexpr int kWorkPiecesPerThread = 4;
std::vector<WorkPiece> split_work(std::span<const int64_t> units, int threads);

// Runs fn(piece) for every piece, each once, on the pool's threads, each
// thread claiming the next piece not yet taken.
void run_pieces(ThreadPool& pool, std::span<const WorkPiece> pieces, const std::function<void(const WorkPiece&)>& fn);

}  // namespace qvl
