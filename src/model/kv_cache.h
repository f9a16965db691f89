// The text decoder's key/value cache: per layer K and V [capacity, kv_heads *
// head_dim] in f32, in one anonymous private mapping so capacity that is never
// written costs address space but no memory (pages are touched only when a
// position is written).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl {

class KvCache {
 public:
  KvCache(int layers, int64_t capacity, int64_t kv_dim);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;
  KvCache(KvCache&& other) noexcept;
  KvCache& operator=(KvCache&&) = delete;

  float* k(int layer) { return base_ + (2 * int64_t{layer}) * capacity_ * kv_dim_; }      // [capacity, kv_dim]
  float* v(int layer) { return base_ + (2 * int64_t{layer} + 1) * capacity_ * kv_dim_; }  // [capacity, kv_dim]
  const float* k(int layer) const { return base_ + (2 * int64_t{layer}) * capacity_ * kv_dim_; }
  const float* v(int layer) const { return base_ + (2 * int64_t{layer} + 1) * capacity_ * kv_dim_; }
  int64_t capacity() const { return capacity_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t size() const { return size_; }  // positions holding valid entries
  void set_size(int64_t n);                // grow after a forward, or truncate to reuse a prefix
  // Makes this cache hold the first n positions of `src` (another sequence
  // with the same prefix): K/V rows copied for every layer, size set to n.
  void copy_prefix(const KvCache& src, int64_t n);
  int layers() const { return layers_; }
  size_t reserved_bytes() const { return bytes_; }

 private:
  int layers_;
  int64_t capacity_, kv_dim_;
  int64_t size_ = 0;
  size_t bytes_ = 0;
  float* base_ = nullptr;
};

}  // namespace qvl
