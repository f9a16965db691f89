// safetensors reader: memory-mapped, zero-copy tensor views over one file or a
// sharded set (model.safetensors.index.json). Everything in a header is
// validated before use; a bad file is one qvl::Error naming file and tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/mapped_file.h"

namespace qvl {

enum class DType { F32, F16, BF16, I64, I32 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "F32", "BF16", ... as in safetensors headers

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping; aligned as the file allows
  size_t nbytes = 0;
  const std::string* file = nullptr;  // path of the file that holds it
  int64_t numel() const;
};

class SafeTensors {
 public:
  // `path` is a .safetensors file, a model.safetensors.index.json, or a folder
  // holding either (index preferred when both exist).
  static SafeTensors open(const std::string& path);

  const TensorView* find(const std::string& name) const;  // nullptr if absent
  const TensorView& get(const std::string& name) const;   // throws naming the tensor
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  std::vector<std::string> files() const;
  size_t total_bytes() const;  // sum of the mapped file sizes

 private:
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::map<std::string, TensorView> tensors_;
};

}  // namespace qvl
