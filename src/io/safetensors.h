// safetensors reader: memory-mapped, zero-copy tensor views over one file or a
// sharded set (model.safetensors.index.json). Everything in a header is
// validated before use; a bad file is one qvl::Error naming file and tensor.
//
// Format (https://github.com/huggingface/safetensors): 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [b, e]},
// "__metadata__": {...}}, then the data section; offsets are relative to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/mapped_file.h"

namespace qvl {

// F8_E4M3: OCP FP8 E4M3 ("e4m3fn": bias 7, no infinities, 0x7F/0xFF NaN,
// max 448), the weights of fine-grained FP8 checkpoints (model/fp8_weights.h).
enum class DType { F32, F16, BF16, I64, I32, F8_E4M3 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "F32", "BF16", ... as in safetensors headers
// The DType for a header's dtype string; nullopt for any other (F64, F8_E5M2, ...).
std::optional<DType> dtype_from_name(const std::string& name);

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping; aligned as the file allows
  size_t nbytes = 0;
  const std::string* file = nullptr;  // path of the file that holds it
  size_t file_offset = 0;             // absolute byte offset of data in that file
  int64_t numel() const;
};

class SafeTensors {
 public:
  // `path` is a .safetensors file, a model.safetensors.index.json, or a folder
  // holding either (index preferred when both exist).
  static SafeTensors open(const std::string& path);

  const TensorView* find(const std::string& name) const;  // nullptr if absent
  const TensorView& get(const std::string& name) const;   // throws naming the tensor
  // All tensors by name (sorted). Iterate this to list names, shapes, dtypes.
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  std::vector<std::string> files() const;
  size_t total_bytes() const;  // sum of the mapped file sizes
  // Maps the pages of [p, p + n) into the process page tables now, so that
  // later reads do not fault (a page-cache-warm 4 GB checkpoint costs ~3 s of
  // first-touch faults spread over the first requests, but ~0.7 s populated in
  // one call). Only the part inside this checkpoint's mappings is touched;
  // returns the bytes covered. Linux MADV_POPULATE_READ (5.14+); elsewhere
  // MADV_WILLNEED plus a read of each page. Safe to call from another thread.
  size_t populate(const void* p, size_t n) const;
  // Whether p points into one of this checkpoint's mappings (a zero-copy view).
  bool contains(const void* p) const;
  // "__metadata__" of the (first) file, e.g. {"format": "pt"}; string values only.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  void add_file(const std::string& path);
  void open_index(const std::string& index_path);

  std::vector<std::unique_ptr<MappedFile>> files_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Upper bound on a header's JSON size; a larger length field means corruption
// (real headers of multi-GB checkpoints are well under 1 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

}  // namespace qvl
