#include "model/default_weights.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "io/model_config.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace qvl {

WeightFormat default_weight_format(uint64_t checkpoint_bytes, uint64_t memory_bytes, bool fp8) {
  const uint64_t budget = memory_bytes / 2;
  if (!fp8 && checkpoint_bytes <= budget) return WeightFormat::BF16;
  // q8 bytes per 32 weights (ops/quant.h's group of 32 with one f16 scale):
  // 34, against 64 bytes of bf16 or 32 of FP8.
  const uint64_t q8_bytes = fp8 ? checkpoint_bytes / 32 * 34 : checkpoint_bytes / 64 * 34;
  if (q8_bytes <= budget) return WeightFormat::Q8;
  return WeightFormat::Q4;
}

uint64_t machine_memory_bytes() {
  if (const char* v = std::getenv("QVL_MEMORY_BYTES"); v && *v) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0' || n == 0) fail("QVL_MEMORY_BYTES must be a positive number of bytes, got '", v, "'");
    return n;
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  uint64_t bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string limit;
  if (cgroup >> limit && limit != "max") {
    const uint64_t l = std::strtoull(limit.c_str(), nullptr, 10);
    if (l > 0 && (bytes == 0 || l < bytes)) bytes = l;
  }
  return bytes;
}

WeightFormat default_weight_format(const std::string& model_dir) {
  const ModelFolder folder = ModelFolder::open(model_dir);
  return default_weight_format(SafeTensors::open(folder.weights_path).total_bytes(), machine_memory_bytes(),
                               folder.config.fp8.has_value());
}

}  // namespace qvl
