// Read-only string tables packed end to end in one buffer. The vocabulary's
// ~150k token strings and their bytes cost ~4 MB this way, against ~20 MB as
// std::string nodes in a vector and a hash map.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace qvl {

// Index i -> the i-th string given to assign().
class PackedStrings {
 public:
  void assign(std::span<const std::string> items);
  std::string_view operator[](size_t i) const {
    const uint32_t b = i == 0 ? 0 : end_[i - 1];
    return std::string_view(bytes_).substr(b, end_[i] - b);
  }
  size_t size() const { return end_.size(); }

 private:
  std::string bytes_;
  std::vector<uint32_t> end_;  // end offset of each string in bytes_
};

// String -> id, sorted by string and searched by bisection.
class PackedIndex {
 public:
  void assign(const std::unordered_map<std::string, int32_t>& map);
  int32_t find(std::string_view key) const;  // -1 when absent

 private:
  PackedStrings keys_;
  std::vector<int32_t> ids_;
};

}  // namespace qvl
