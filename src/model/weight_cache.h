// The weight cache: the q8/q4 matrices qvl makes from a bf16 checkpoint,
// kept in a file beside the Hugging Face cache so the next start maps them
// instead of quantizing again (minutes for 30B parameters, under a second
// mapped). docs/weight-cache.md describes it for users.
//
// One file per (checkpoint, format): <dir>/<key>.qvlw, <key> the hex
// SHA-256 of weight_cache_key_text(). Layout (little-endian):
//
//   header  [0, 128)     magic "QVLWCACH", format version, weight format,
//                        key, file size, table offset/size/checksum, and a
//                        checksum of the header itself
//   data    [128, T)     each matrix exactly as WeightMatrix::from_bf16 lays
//                        it out in memory (quant.h), at a 64-byte aligned
//                        offset, so a mapping of the file is used in place
//   table   [T, end)     source description, then per matrix: name, format,
//                        rows, cols, offset, bytes; then one checksum64 per
//                        kChecksumChunk bytes of the data section
//
// A file is used only if every field checks: magic, version, key and format
// as expected, size as recorded (a truncated file fails here), table and
// header checksums, every matrix inside the data section with the size its
// shape implies, and the checksum of every data chunk (verified on the
// thread pool at open, which also faults the pages in for the first
// token). Anything else is a warning and a rebuild, never a crash or a
// stale weight. Files are written to a temporary name and renamed, so a
// reader sees a whole file or none; the folder is bounded (least recently
// used files removed past max_bytes).
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "io/model_config.h"
#include "io/safetensors.h"
#include "model/weight_cache_options.h"
#include "model/weights.h"
#include "ops/matmul.h"
#include "ops/thread_pool.h"

namespace qvl {

// Bump when the bytes from_bf16 produces for q8/q4 change (quantizer or
// layout), or this file's layout does: older files then never match.
inline constexpr uint32_t kWeightCacheVersion = 1;

// $QVL_WEIGHT_CACHE, else "qvl-weights" beside the Hugging Face hub cache
// folder (hub::default_cache_dir(), e.g. ~/.cache/huggingface/qvl-weights).
std::string default_weight_cache_dir();

// What the converted matrices depend on, one line each: this cache's
// version and quant.h's layout constants; the weight format; config.json's
// SHA-256; and per checkpoint file its identity and the SHA-256 of its
// safetensors header (names, dtypes, shapes, offsets).
//
// A file's identity is (device, inode, size, mtime ns, ctime ns), not a hash
// of its bytes: hashing a 4 GB checkpoint costs seconds to a minute
// (qvl's SHA-256 read 0.09 GB/s on one core of the shared development VM),
// more than the whole cached start may take. It is still safe:
// writing a file's bytes sets its mtime and ctime, and ctime cannot be set
// back from user space (utimensat sets only atime and mtime), so a
// checkpoint rewritten in place keeps neither; one replaced by a new file
// (download, copy, rename) has a new inode. A checkpoint that merely moves
// or is copied elsewhere is converted again (a miss, never a stale hit).
std::string weight_cache_key_text(const ModelFolder& folder, const SafeTensors& st, WeightFormat format);
std::string weight_cache_key(const ModelFolder& folder, const SafeTensors& st, WeightFormat format);  // hex SHA-256

class WeightCache {
 public:
  explicit WeightCache(WeightCacheOptions options);
  const std::string& dir() const { return dir_; }
  std::string path_for(const std::string& key) const;

  // The file for `key` mapped and verified, its matrices viewed in place;
  // nullopt when there is none, and also (after one line on `log` saying
  // why) when it fails a check. A used file's mtime is set to now.
  std::optional<MatrixTable> open(const std::string& key, WeightFormat format, ThreadPool* pool,
                                  std::ostream& log) const;

  // Writes `matrices` (all of `format`) as the file for `key` (temp file,
  // fsync, rename), then evicts past max_bytes, never this file. Returns
  // its path; throws qvl::Error naming the path on an I/O error.
  std::string store(const std::string& key, WeightFormat format, const std::string& source,
                    const MatrixTable& matrices) const;

  // Every cache file, most recently used first.
  std::vector<WeightCacheFile> list() const;

  // Removes least recently used files (and temp files left by a writer that
  // died over an hour ago) until the folder holds at most max_bytes,
  // sparing `keep`.
  void evict(const std::string& keep) const;

 private:
  WeightCacheOptions options_;
  std::string dir_;
};

// Writes one cache file a matrix at a time (store() and tools that make a
// file without holding every matrix, make_random_model). Nothing is visible
// under `path` until commit(); a writer destroyed before it removes its
// temporary file.
class WeightCacheWriter {
 public:
  WeightCacheWriter(std::string path, const std::string& key, WeightFormat format, std::string source);
  ~WeightCacheWriter();
  WeightCacheWriter(const WeightCacheWriter&) = delete;
  WeightCacheWriter& operator=(const WeightCacheWriter&) = delete;

  void add(const std::string& name, const WeightMatrix& m);
  void commit();

 private:
  struct Entry {
    std::string name;
    int64_t rows, cols;
    uint64_t offset, bytes;
  };
  void write_all(const void* p, size_t n);
  std::string path_, tmp_, key_, source_;
  WeightFormat format_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace qvl
