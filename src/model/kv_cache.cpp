#include "model/kv_cache.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace qvl {

KvCache::KvCache(int layers, int64_t capacity, int64_t kv_dim, KvType type)
    : layers_(layers), capacity_(capacity), kv_dim_(kv_dim), type_(type) {
  if (layers <= 0 || capacity <= 0 || kv_dim <= 0) fail("KV cache: invalid size ", layers, "x", capacity, "x", kv_dim);
  bytes_ = static_cast<size_t>(capacity) * bytes_per_position();
  // MAP_NORESERVE: reserve address space only; memory is committed page by
  // page as the context fills.
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("cannot reserve ", bytes_ >> 20, " MiB for a KV cache of ", capacity, " tokens (", std::strerror(errno),
         "); lower --ctx-size");
  base_ = static_cast<std::byte*>(p);
}

KvCache::KvCache(KvCache&& o) noexcept
    : layers_(o.layers_),
      capacity_(o.capacity_),
      kv_dim_(o.kv_dim_),
      type_(o.type_),
      size_(o.size_),
      bytes_(o.bytes_),
      base_(o.base_) {
  o.base_ = nullptr;
  o.bytes_ = 0;
}

KvCache::~KvCache() {
  if (base_) munmap(base_, bytes_);
}

void KvCache::set_size(int64_t n) {
  if (n < 0 || n > capacity_) fail("KV cache: size ", n, " outside [0, ", capacity_, "]");
  size_ = n;
}

void KvCache::copy_prefix(const KvCache& src, int64_t n) {
  if (&src == this) return set_size(n);
  if (src.layers_ != layers_ || src.kv_dim_ != kv_dim_ || src.type_ != type_)
    fail("KV cache: cannot copy a prefix between caches of ", src.layers_, "x", src.kv_dim_, " ",
         kv_type_name(src.type_), " and ", layers_, "x", kv_dim_, " ", kv_type_name(type_), " (layers x kv_dim type)");
  if (n < 0 || n > src.size_ || n > capacity_)
    fail("KV cache: prefix of ", n, " positions outside the source's ", src.size_, " or this capacity ", capacity_);
  for (int i = 0; i < 2 * layers_; ++i) std::memcpy(plane(i), src.plane(i), static_cast<size_t>(n) * row_bytes());
  size_ = n;
}

}  // namespace qvl
