// A scratch folder for fuzz targets whose parser reads a file (safetensors
// headers, indexes): one per process, made on first use; each input is
// written to a file in it and opened by path, as qvl opens a model.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace qvl::fuzz {

inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "qvl_fuzz_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) __builtin_trap();
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& p, const void* data, size_t size) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
}

}  // namespace qvl::fuzz
