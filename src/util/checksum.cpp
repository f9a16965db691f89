#include "util/checksum.h"

#include <cstring>
#include <initializer_list>

namespace qvl {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;  // XXH64's primes
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t round(uint64_t acc, uint64_t word) { return rotl(acc + word * kP2, 31) * kP1; }
inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

uint64_t checksum64(const void* data, size_t bytes, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t a = seed + kP1 + kP2, b = seed + kP2, c = seed, d = seed - kP1;
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    a = round(a, load64(p + i));
    b = round(b, load64(p + i + 8));
    c = round(c, load64(p + i + 16));
    d = round(d, load64(p + i + 24));
  }
  uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18);
  for (uint64_t lane : {a, b, c, d}) h = (h ^ round(0, lane)) * kP1 + kP4;
  h += bytes;
  for (; i + 8 <= bytes; i += 8) h = rotl(h ^ round(0, load64(p + i)), 27) * kP1 + kP4;
  for (; i < bytes; ++i) h = rotl(h ^ (p[i] * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

}  // namespace qvl
