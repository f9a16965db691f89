// A minimal safetensors reader for the image tests (the golden files are
// small; the engine's reader lives in src/io). Reads the whole file.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace qvl_test {

struct Tensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  template <typename T>
  std::vector<T> as() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::map<std::string, Tensor> read_safetensors(const std::string& path) {
  const std::vector<uint8_t> f = read_file(path);
  if (f.size() < 8) throw std::runtime_error(path + ": too short");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | f[i];
  if (n > f.size() - 8) throw std::runtime_error(path + ": bad header length");
  const auto header = nlohmann::json::parse(f.begin() + 8, f.begin() + 8 + static_cast<long>(n));
  std::map<std::string, Tensor> out;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    Tensor t;
    t.dtype = v.at("dtype").get<std::string>();
    t.shape = v.at("shape").get<std::vector<int64_t>>();
    const auto off = v.at("data_offsets").get<std::vector<uint64_t>>();
    const size_t base = 8 + n;
    if (off[1] < off[0] || base + off[1] > f.size()) throw std::runtime_error(path + ": bad offsets for " + name);
    t.bytes.assign(f.begin() + static_cast<long>(base + off[0]), f.begin() + static_cast<long>(base + off[1]));
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace qvl_test
