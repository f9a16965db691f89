// The text decoder's key/value cache: per layer K and V [capacity, kv_heads *
// head_dim], in f32 or IEEE f16, in one anonymous private mapping so capacity
// that is never written costs address space but no memory (pages are touched
// only when a position is written).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/formats.h"

namespace qvl {

// f32 keeps every K/V value exact (the golden fixtures' numbers); f16 halves
// the cache's memory and the bytes a decode step reads, at a relative
// rounding error of at most 2^-11 per element (ops.h: f32_to_f16).
// (KvType: util/formats.h.)

class KvCache {
 public:
  KvCache(int layers, int64_t capacity, int64_t kv_dim, KvType type = KvType::F32);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;
  KvCache(KvCache&& other) noexcept;
  KvCache& operator=(KvCache&&) = delete;

  KvType type() const { return type_; }
  // [capacity, kv_dim] of the layer, for an f32 cache.
  float* k(int layer) { return static_cast<float*>(plane(2 * layer)); }
  float* v(int layer) { return static_cast<float*>(plane(2 * layer + 1)); }
  const float* k(int layer) const { return static_cast<const float*>(plane(2 * layer)); }
  const float* v(int layer) const { return static_cast<const float*>(plane(2 * layer + 1)); }
  // The same for an f16 cache (IEEE half bits).
  uint16_t* k16(int layer) { return static_cast<uint16_t*>(plane(2 * layer)); }
  uint16_t* v16(int layer) { return static_cast<uint16_t*>(plane(2 * layer + 1)); }
  const uint16_t* k16(int layer) const { return static_cast<const uint16_t*>(plane(2 * layer)); }
  const uint16_t* v16(int layer) const { return static_cast<const uint16_t*>(plane(2 * layer + 1)); }

  int64_t capacity() const { return capacity_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t size() const { return size_; }  // positions holding valid entries
  void set_size(int64_t n);                // grow after a forward, or truncate to reuse a prefix
  // Makes this cache hold the first n positions of `src` (another sequence
  // with the same prefix and element type): K/V rows copied for every layer,
  // size set to n.
  void copy_prefix(const KvCache& src, int64_t n);
  int layers() const { return layers_; }
  size_t reserved_bytes() const { return bytes_; }
  size_t bytes_per_position() const { return 2 * static_cast<size_t>(layers_) * row_bytes(); }

 private:
  size_t elem_bytes() const { return type_ == KvType::F16 ? 2 : 4; }
  size_t row_bytes() const { return static_cast<size_t>(kv_dim_) * elem_bytes(); }
  void* plane(int i) const { return base_ + static_cast<size_t>(i) * static_cast<size_t>(capacity_) * row_bytes(); }

  int layers_;
  int64_t capacity_, kv_dim_;
  KvType type_;
  int64_t size_ = 0;
  size_t bytes_ = 0;
  std::byte* base_ = nullptr;
};

}  // namespace qvl
