// Workers spin briefly on a generation counter, then sleep on it (C++20
// atomic wait = futex on Linux): decode issues ~300 parallel_for calls per
// token a few microseconds apart, so a short spin saves the wake-up latency,
// while a machine shared with others is not burnt by idle workers.
#include "ops/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define QVL_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define QVL_PAUSE() asm volatile("yield")
#else
#define QVL_PAUSE() ((void)0)
#endif

#include "util/error.h"

namespace qvl {
namespace {

// How long an idle worker spins before sleeping, and how long the caller
// spins on stragglers before yielding its core (the machine may be shared, and
// a descheduled worker cannot finish while we spin on its core).
constexpr auto kSpinTime = std::chrono::microseconds(50);
constexpr auto kCallerSpinTime = std::chrono::microseconds(20);

// Spins until pred() holds or `limit` passes; true if pred() held.
template <class Pred>
bool spin_until(Pred pred, std::chrono::microseconds limit) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      QVL_PAUSE();
    }
    if (std::chrono::steady_clock::now() - start > limit) return pred();
  }
}

int allowed_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

int physical_cores() {
  // Count distinct (package, core) pairs among online CPUs; SMT siblings share one.
  std::set<std::pair<std::string, std::string>> cores;
  const int listed = static_cast<int>(std::thread::hardware_concurrency());
  for (int cpu = 0; cpu < 4096; ++cpu) {
    std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core(base + "core_id"), pkg(base + "physical_package_id");
    if (!core || !pkg) {
      if (cpu >= listed) break;
      continue;  // an offline CPU: numbering has a hole
    }
    std::string c, p;
    core >> c;
    pkg >> p;
    cores.emplace(p, c);
  }
  int n = cores.empty() ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))
                        : static_cast<int>(cores.size());
  return std::max(1, std::min(n, allowed_cpus()));
}

struct ThreadPool::Impl {
  int threads = 1;
  std::vector<std::thread> workers;
  // Job description, published by the release increment of `generation`.
  const std::function<void(int64_t, int64_t, int)>* fn = nullptr;
  int64_t n = 0;
  int active = 0;  // threads taking part in the current job
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  std::exception_ptr error;

  void run_chunk(int index) {
    int64_t begin = n * index / active, end = n * (index + 1) / active;
    if (begin >= end) return;
    try {
      (*fn)(begin, end, index);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }

  void worker(int index) {
    uint64_t seen = 0;
    for (;;) {
      if (!spin_until([&] { return generation.load(std::memory_order_acquire) != seen; }, kSpinTime)) {
        generation.wait(seen, std::memory_order_acquire);
        continue;
      }
      seen = generation.load(std::memory_order_acquire);
      if (stop.load(std::memory_order_acquire)) return;
      // Every worker acknowledges every job, even with an empty share, so no
      // worker can lag behind and read the next job's fields mid-write.
      if (index < active) run_chunk(index);
      pending.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
};

ThreadPool::ThreadPool(int threads) : impl_(std::make_unique<Impl>()) {
  int cores = physical_cores();
  impl_->threads = threads <= 0 ? cores : std::min(threads, std::max(cores, 1));
  for (int i = 1; i < impl_->threads; ++i) impl_->workers.emplace_back([this, i] { impl_->worker(i); });
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true, std::memory_order_release);
  impl_->generation.fetch_add(1, std::memory_order_acq_rel);
  impl_->generation.notify_all();
  for (auto& t : impl_->workers) t.join();
}

int ThreadPool::size() const { return impl_->threads; }

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  Impl& s = *impl_;
  int active = static_cast<int>(std::min<int64_t>(n, s.threads));
  if (active == 1) {
    fn(0, n, 0);
    return;
  }
  s.fn = &fn;
  s.n = n;
  s.active = active;
  s.error = nullptr;
  s.pending.store(s.threads - 1, std::memory_order_relaxed);
  s.generation.fetch_add(1, std::memory_order_acq_rel);
  s.generation.notify_all();
  s.run_chunk(0);
  auto done = [&] { return s.pending.load(std::memory_order_acquire) == 0; };
  while (!spin_until(done, kCallerSpinTime)) std::this_thread::yield();
  if (s.error) std::rethrow_exception(s.error);
}

}  // namespace qvl
