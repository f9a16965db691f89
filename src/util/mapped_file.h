// A read-only memory map of a whole file (RAII). Weights are viewed in place,
// never copied, so loading costs page-cache lookups rather than reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace qvl {

class MappedFile {
 public:
  // Throws qvl::Error naming the path and the system reason.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release() noexcept;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole (small) file into a string; throws qvl::Error naming the path.
std::string read_file(const std::string& path);

}  // namespace qvl
