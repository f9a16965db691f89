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

// Chunk i of job g is run by whoever first moves claim[i] from below g to g:
// its worker, or the caller once its own chunk is done. So a call never waits
// for a worker the OS has not scheduled (the machine may be shared), only for
// chunks already running. A worker that wakes late for job g finds its chunk
// claimed and skips it; since a claim succeeds only while job g is still in
// progress, the job fields it read (after seeing generation g) are job g's.
struct ThreadPool::Impl {
  using Fn = std::function<void(int64_t, int64_t, int)>;
  int threads = 1;
  std::vector<std::thread> workers;
  // Job description, published by the release increment of `generation`.
  std::atomic<const Fn*> fn{nullptr};
  std::atomic<int64_t> n{0};
  std::atomic<int> active{0};  // chunks in the current job
  std::atomic<uint64_t> generation{0};
  std::unique_ptr<std::atomic<uint64_t>[]> claim;  // [threads] last job each chunk was claimed for
  std::atomic<int> remaining{0};                   // chunks of the current job not finished
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  std::exception_ptr error;

  bool try_claim(int index, uint64_t g) {
    uint64_t c = claim[index].load(std::memory_order_acquire);
    return c < g && claim[index].compare_exchange_strong(c, g, std::memory_order_acq_rel);
  }

  void run_chunk(const Fn& f, int64_t count, int chunks, int index) {
    int64_t begin = count * index / chunks, end = count * (index + 1) / chunks;
    if (begin < end) {
      try {
        f(begin, end, index);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
    remaining.fetch_sub(1, std::memory_order_acq_rel);
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
      const Fn* f = fn.load(std::memory_order_relaxed);
      const int64_t count = n.load(std::memory_order_relaxed);
      const int chunks = active.load(std::memory_order_relaxed);
      if (index < chunks && try_claim(index, seen)) run_chunk(*f, count, chunks, index);
    }
  }
};

ThreadPool::ThreadPool(int threads) : impl_(std::make_unique<Impl>()) {
  int cores = physical_cores();
  impl_->threads = threads <= 0 ? cores : std::min(threads, std::max(cores, 1));
  impl_->claim = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(impl_->threads));
  for (int i = 0; i < impl_->threads; ++i) impl_->claim[i].store(0);
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
  s.fn.store(&fn, std::memory_order_relaxed);
  s.n.store(n, std::memory_order_relaxed);
  s.active.store(active, std::memory_order_relaxed);
  s.error = nullptr;
  s.remaining.store(active, std::memory_order_relaxed);
  const uint64_t g = s.generation.fetch_add(1, std::memory_order_acq_rel) + 1;
  s.generation.notify_all();
  if (s.try_claim(0, g)) s.run_chunk(fn, n, active, 0);
  for (int i = 1; i < active; ++i)  // chunks whose worker has not woken up yet
    if (s.try_claim(i, g)) s.run_chunk(fn, n, active, i);
  auto done = [&] { return s.remaining.load(std::memory_order_acquire) == 0; };
  while (!spin_until(done, kCallerSpinTime)) std::this_thread::yield();
  if (s.error) std::rethrow_exception(s.error);
}

}  // namespace qvl
