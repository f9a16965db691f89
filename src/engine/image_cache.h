// The image-embedding cache: the vision encoder's output for one image (its
// merged embeddings and every DeepStack level), kept by the image's content
// and the preprocessing that sized it, so a follow-up question about the same
// picture skips preprocessing and the vision encoder. Least recently used
// entries go first; the total is bounded in bytes.
//
// Used by the engine's thread only (find/insert are not synchronised);
// stats() may be read from any thread (it backs /metrics).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "image/image.h"
#include "model/positions.h"

namespace qvl {

// What decides an image's embeddings: its pixels (and declared size) and the
// pixel range it is resized into. `hash` covers all of them; the other fields
// are compared too, so two keys are equal only when the hash and the visible
// geometry agree.
struct ImageKey {
  uint64_t hash = 0;  // never 0 (0 marks a text token in a prompt's token keys)
  int32_t width = 0, height = 0;
  int64_t min_pixels = 0, max_pixels = 0;
  bool operator==(const ImageKey&) const = default;
};

// SipHash-c-d of n bytes under the key (k0, k1), as the specification
// defines it (key and message words little-endian).
uint64_t sip_hash(uint64_t k0, uint64_t k1, const uint8_t* data, size_t n, int c_rounds, int d_rounds);

// A keyed 64-bit hash of the decoded pixels and the preprocessing range. The
// seed is random per engine, so colliding images cannot be prepared offline
// to poison another client's answers.
ImageKey image_key(const Image& image, int64_t min_pixels, int64_t max_pixels, uint64_t seed);
// A video's key: every frame's pixels, in order, and its pixel budget (the
// timestamps change the prompt's text, not the embeddings).
ImageKey video_key(std::span<const Image> frames, int64_t min_pixels, int64_t max_pixels, uint64_t seed);

// One image's rows of VisionFeatures.
struct ImageFeatures {
  ImageGrid grid;
  int64_t tokens = 0;
  std::vector<float> embeds;                 // [tokens, out_hidden]
  std::vector<std::vector<float>> deepstack;  // [k][tokens, out_hidden]
  size_t bytes() const;
};

struct ImageCacheStats {
  uint64_t hits = 0, misses = 0, evictions = 0;
  size_t bytes = 0, entries = 0, capacity = 0;
};

class ImageEmbeddingCache {
 public:
  explicit ImageEmbeddingCache(size_t capacity_bytes);  // 0: disabled (finds always miss, nothing is kept)

  // The entry for `key` (now the most recently used), or null. Counts a hit
  // or a miss. The caller keeps the returned pointer alive as long as it
  // needs the rows: a later insert may evict the entry from the cache.
  std::shared_ptr<const ImageFeatures> find(const ImageKey& key);
  // Keeps `value`, evicting least recently used entries until the total fits.
  // An entry larger than the whole capacity is not kept.
  void insert(const ImageKey& key, std::shared_ptr<const ImageFeatures> value);
  void clear();

  ImageCacheStats stats() const;
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    ImageKey key;
    std::shared_ptr<const ImageFeatures> value;
    size_t bytes = 0;
  };
  void evict_until(size_t limit);

  size_t capacity_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;  // by key.hash
  std::atomic<uint64_t> hits_{0}, misses_{0}, evictions_{0};
  std::atomic<size_t> bytes_{0}, entries_{0};
};

}  // namespace qvl
