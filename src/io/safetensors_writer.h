// safetensors writer: the header laid out from the tensors' shapes, then the
// data streamed in large chunks (a multi-GB file never sits in memory). Used by
// tools/make_random_model and by tests that build files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace qvl {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
};

// The header bytes (8-byte length + JSON padded with spaces so the data starts
// 8-byte aligned) for tensors stored back to back in the given order.
std::string safetensors_header(const std::vector<TensorInfo>& tensors,
                               const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Produces bytes [byte_offset, byte_offset + out.size()) of tensor `index`.
// Called in tensor order, never across a tensor boundary, always on whole
// elements (offset and size are multiples of the dtype's size).
using TensorFill = std::function<void(size_t index, size_t byte_offset, std::span<uint8_t> out)>;

struct WriteOptions {
  size_t chunk_bytes = 64u << 20;  // one write() per chunk; filling overlaps writing
  std::map<std::string, std::string> metadata{{"format", "pt"}};
};

// Writes `path` (through `path`.tmp, renamed when complete). Throws naming the path.
void write_safetensors(const std::string& path, const std::vector<TensorInfo>& tensors, const TensorFill& fill,
                       const WriteOptions& options = {});

// Convenience for small in-memory tensors: data[i] holds tensor i's bytes.
void write_safetensors(const std::string& path, const std::vector<TensorInfo>& tensors,
                       const std::vector<std::vector<uint8_t>>& data);

}  // namespace qvl
