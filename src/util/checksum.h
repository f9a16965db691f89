// A fast 64-bit checksum to detect corrupted or torn cached data (the weight
// cache, model/weight_cache.h). Not for adversaries. One core over 256 MB
// on the 2-core development VM while shared: 8.9 GB/s, against 0.09 GB/s for
// qvl's SHA-256 (io/hub_sha.h), so a 1-5 GB cache file is checked within
// the time budget of a start.
//
// Four lanes, each consuming every fourth 8-byte word with the round of
// XXH64 (Y. Collet, xxHash specification, "XXH64 algorithm":
// acc = rotl(acc + word * P2, 31) * P1), then the lanes, the length and a
// byte-wise tail are mixed and avalanched as XXH64 mixes its final state.
// The values differ from XXH64's (the merge is simplified); only equality
// of two checksums of this function matters.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl {

uint64_t checksum64(const void* data, size_t bytes, uint64_t seed = 0);

}  // namespace qvl
