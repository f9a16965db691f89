// libFuzzer target: model.safetensors.index.json is the input; beside it are
// two small shards (tensors "a" and "b" in model-00001-of-00002.safetensors,
// "c" in model-00002-of-00002.safetensors), so a weight_map can name real,
// missing, escaping and mismatched files. Only success or a qvl::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_scratch.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace {

void write_shard(const std::filesystem::path& p, const std::string& header, size_t data_bytes) {
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header + std::string(data_bytes, '\0');
  qvl::fuzz::write_file(p, file.data(), file.size());
}

const std::filesystem::path& model_dir() {
  static const std::filesystem::path dir = [] {
    const auto d = qvl::fuzz::scratch_dir();
    write_shard(d / "model-00001-of-00002.safetensors",
                R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[4],"data_offsets":[8,16]}})",
                16);
    write_shard(d / "model-00002-of-00002.safetensors", R"({"c":{"dtype":"F16","shape":[1,2],"data_offsets":[0,4]}})", 4);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto index = model_dir() / "model.safetensors.index.json";
  qvl::fuzz::write_file(index, data, size);
  try {
    const qvl::SafeTensors st = qvl::SafeTensors::open(model_dir().string());
    if (st.tensors().empty()) __builtin_trap();  // an index that opens maps at least one tensor
  } catch (const qvl::Error&) {
  }
  return 0;
}
