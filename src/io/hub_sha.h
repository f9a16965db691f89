// Streaming SHA-256 and SHA-1 (FIPS 180-4) for verifying downloads against the
// hub's etags: LFS files are named by the SHA-256 of their bytes, small files
// by their git blob id, SHA-1 of "blob <size>\0" + bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace qvl::hub {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hex();  // finishes the hash; call once
  void block(const uint8_t* p);  // one 64-byte block (used by the shared padding code)

 private:
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;
  uint64_t total_ = 0;
};

class Sha1 {
 public:
  Sha1();
  void update(const void* data, size_t n);
  std::string hex();  // finishes the hash; call once
  void block(const uint8_t* p);  // one 64-byte block (used by the shared padding code)

 private:
  std::array<uint32_t, 5> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;
  uint64_t total_ = 0;
};

// The git object id of a blob holding `size` bytes, fed with update() after.
Sha1 git_blob_hasher(uint64_t size);

// Hashes a whole file; throws qvl::Error naming the path on a read error.
std::string sha256_file(const std::string& path);
std::string git_blob_sha1_file(const std::string& path);

bool is_hex(const std::string& s, size_t len);  // exactly len lowercase/uppercase hex digits

}  // namespace qvl::hub
