#include "engine/image_cache.h"

#include <bit>
#include <cstring>

namespace qvl {
namespace {

// SipHash-c-d (Aumasson & Bernstein, "SipHash: a fast short-input PRF",
// 2012): a keyed hash, fast enough for pixels (GB/s) and, unlike
// multiply-xor hashes, without collisions that hold for every key.
class SipHasher {
 public:
  SipHasher(uint64_t k0, uint64_t k1, int c_rounds, int d_rounds)
      : c_(c_rounds),
        d_(d_rounds),
        v0_(k0 ^ 0x736f6d6570736575ull),
        v1_(k1 ^ 0x646f72616e646f6dull),
        v2_(k0 ^ 0x6c7967656e657261ull),
        v3_(k1 ^ 0x7465646279746573ull) {}

  void word(uint64_t m) {
    v3_ ^= m;
    for (int i = 0; i < c_; ++i) round();
    v0_ ^= m;
    length_ += 8;
  }

  // Whole words, then the tail bytes padded with the total length in the
  // top byte (the final block of the specification).
  uint64_t finish(const uint8_t* data, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t m;
      std::memcpy(&m, data + i, 8);
      if constexpr (std::endian::native == std::endian::big) m = byteswap(m);
      word(m);
    }
    uint64_t last = static_cast<uint64_t>(length_ + (n - i)) << 56;
    for (size_t k = 0; i + k < n; ++k) last |= static_cast<uint64_t>(data[i + k]) << (8 * k);
    v3_ ^= last;
    for (int r = 0; r < c_; ++r) round();
    v0_ ^= last;
    v2_ ^= 0xff;
    for (int r = 0; r < d_; ++r) round();
    return v0_ ^ v1_ ^ v2_ ^ v3_;
  }

 private:
  static uint64_t byteswap(uint64_t x) {
    uint64_t r = 0;
    for (int k = 0; k < 8; ++k) r = (r << 8) | ((x >> (8 * k)) & 0xff);
    return r;
  }
  void round() {
    v0_ += v1_;
    v1_ = std::rotl(v1_, 13);
    v1_ ^= v0_;
    v0_ = std::rotl(v0_, 32);
    v2_ += v3_;
    v3_ = std::rotl(v3_, 16);
    v3_ ^= v2_;
    v0_ += v3_;
    v3_ = std::rotl(v3_, 21);
    v3_ ^= v0_;
    v2_ += v1_;
    v1_ = std::rotl(v1_, 17);
    v1_ ^= v2_;
    v2_ = std::rotl(v2_, 32);
  }

  int c_, d_;
  uint64_t v0_, v1_, v2_, v3_;
  uint64_t length_ = 0;
};

// splitmix64's output function (Steele, Lea & Flood 2014): a second key from
// the first.
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t sip_hash(uint64_t k0, uint64_t k1, const uint8_t* data, size_t n, int c_rounds, int d_rounds) {
  return SipHasher(k0, k1, c_rounds, d_rounds).finish(data, n);
}

ImageKey image_key(const Image& image, int64_t min_pixels, int64_t max_pixels, uint64_t seed) {
  // SipHash-1-3, the variant Rust's standard hash maps use: pixels are long
  // inputs, and 1-3 is about twice as fast as 2-4.
  SipHasher h(seed, splitmix(seed), 1, 3);
  h.word(static_cast<uint64_t>(static_cast<uint32_t>(image.width)) << 32 | static_cast<uint32_t>(image.height));
  h.word(static_cast<uint64_t>(static_cast<uint32_t>(image.full_width)) << 32 |
         static_cast<uint32_t>(image.full_height));
  h.word(static_cast<uint64_t>(image.scale_denom));
  h.word(static_cast<uint64_t>(min_pixels));
  h.word(static_cast<uint64_t>(max_pixels));
  ImageKey k;
  k.hash = h.finish(image.rgb.data(), image.rgb.size()) | 1;
  k.width = image.width;
  k.height = image.height;
  k.min_pixels = min_pixels;
  k.max_pixels = max_pixels;
  return k;
}

ImageKey video_key(std::span<const Image> frames, int64_t min_pixels, int64_t max_pixels, uint64_t seed) {
  SipHasher h(seed, splitmix(seed ^ 0x766964656full), 1, 3);  // "video": no frame list hashes like an image
  h.word(static_cast<uint64_t>(frames.size()));
  for (const Image& f : frames) h.word(image_key(f, min_pixels, max_pixels, seed).hash);
  ImageKey k;
  k.hash = h.finish(nullptr, 0) | 1;
  if (!frames.empty()) k.width = frames[0].width, k.height = frames[0].height;
  k.min_pixels = min_pixels;
  k.max_pixels = max_pixels;
  return k;
}

size_t ImageFeatures::bytes() const {
  size_t n = embeds.size();
  for (const std::vector<float>& d : deepstack) n += d.size();
  return n * sizeof(float) + sizeof(ImageFeatures);
}

ImageEmbeddingCache::ImageEmbeddingCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}

std::shared_ptr<const ImageFeatures> ImageEmbeddingCache::find(const ImageKey& key) {
  const auto it = index_.find(key.hash);
  if (it == index_.end() || !(it->second->key == key)) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return it->second->value;
}

void ImageEmbeddingCache::insert(const ImageKey& key, std::shared_ptr<const ImageFeatures> value) {
  if (!value) return;
  const size_t bytes = value->bytes();
  if (bytes > capacity_) return;
  if (const auto it = index_.find(key.hash); it != index_.end()) {
    bytes_.fetch_sub(it->second->bytes, std::memory_order_relaxed);
    lru_.erase(it->second);
    index_.erase(it);
  }
  evict_until(capacity_ - bytes);
  lru_.push_front({key, std::move(value), bytes});
  index_[key.hash] = lru_.begin();
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  entries_.store(lru_.size(), std::memory_order_relaxed);
}

void ImageEmbeddingCache::evict_until(size_t limit) {
  while (!lru_.empty() && bytes_.load(std::memory_order_relaxed) > limit) {
    bytes_.fetch_sub(lru_.back().bytes, std::memory_order_relaxed);
    index_.erase(lru_.back().key.hash);
    lru_.pop_back();
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  entries_.store(lru_.size(), std::memory_order_relaxed);
}

void ImageEmbeddingCache::clear() {
  lru_.clear();
  index_.clear();
  bytes_.store(0, std::memory_order_relaxed);
  entries_.store(0, std::memory_order_relaxed);
}

ImageCacheStats ImageEmbeddingCache::stats() const {
  ImageCacheStats s;
  s.hits = hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.evictions = evictions_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.entries = entries_.load(std::memory_order_relaxed);
  s.capacity = capacity_;
  return s;
}

}  // namespace qvl
