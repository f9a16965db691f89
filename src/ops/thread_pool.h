// A fixed group of compute threads. parallel_for splits [0, n) into
// contiguous chunks, one per thread, and returns when all are done; the
// calling thread takes a share. Low overhead per call: decode makes ~300 calls
// per token.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace qvl {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads <= 0: physical cores
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // fn(begin, end, thread_index). Must not be called re-entrantly.
  // thread_index is the chunk's number (0 .. size()-1, unique within a call,
  // so it can pick per-thread scratch); a chunk whose worker has not woken
  // up yet is run by the calling thread instead of waiting for it.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

int physical_cores();

}  // namespace qvl
