#include "engine/compute_threads.h"

#include "ops/thread_pool.h"

namespace qvl {

int compute_threads(int threads) { return threads > 0 ? threads : physical_cores(); }

}  // namespace qvl
