// libFuzzer target: a safetensors file whose header JSON is the input (the
// 8-byte length is written for it, then 64 data bytes), opened as qvl opens a
// checkpoint. Only success or a qvl::Error is allowed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_scratch.h"
#include "io/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((static_cast<uint64_t>(size) >> (8 * i)) & 0xff);
  file.append(reinterpret_cast<const char*>(data), size);
  file.append(64, '\0');
  const auto path = qvl::fuzz::scratch_dir() / "model.safetensors";
  qvl::fuzz::write_file(path, file.data(), file.size());
  try {
    const qvl::SafeTensors st = qvl::SafeTensors::open(path.string());
    for (const auto& [name, view] : st.tensors())
      if (name.empty()) __builtin_trap();
  } catch (const qvl::Error&) {
  }
  return 0;
}
