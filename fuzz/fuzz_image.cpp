// libFuzzer target: decode + preprocess any bytes. Every outcome other than
// success or qvl::Error (a crash, a sanitizer report, an out-of-memory, a
// timeout) is a bug. Limits are tightened so that a fuzzed header cannot make
// one run allocate gigabytes legitimately.
#include <cstddef>
#include <cstdint>
#include <span>

#include "image/image.h"
#include "image/preprocess.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qvl::DecodeLimits limits;
  limits.max_encoded_bytes = 1u << 20;
  limits.max_decoded_pixels = 4u << 20;
  qvl::PreprocessorConfig config;  // Qwen3-VL defaults: patch 16, merge 2, temporal 2
  config.min_pixels = 32 * 32;
  config.max_pixels = 128 * 128;
  // Odd sizes take the DCT-scaling path so both JPEG decode paths are fuzzed.
  const bool dct_scaling = size % 2 == 1;
  try {
    const qvl::PixelValues pv =
        qvl::decode_and_preprocess(std::span<const uint8_t>(data, size), config, {}, limits, dct_scaling);
    if (pv.data.size() != static_cast<size_t>(pv.num_patches) * pv.patch_dim) __builtin_trap();
  } catch (const qvl::Error&) {
  }
  return 0;
}
