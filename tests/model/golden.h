// Reads the reference fixtures (tests/fixtures/golden): the manifest and the
// golden .safetensors files (F32, I64 and U8 tensors), plus comparison helpers
// that name the stage, the index and the worst difference on failure.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::golden {

inline std::string fixtures() { return QVL_FIXTURES_DIR; }
inline std::string model_dir() { return fixtures() + "/tiny-qwen3vl"; }
inline std::string moe_model_dir() { return fixtures() + "/tiny-qwen3vl-moe"; }
// The dense model with FP8 text linears (golden-fp8), and the MoE model with
// its experts stored one by one, bf16 and FP8 (tools/make_moe_per_expert_fixture.py).
inline std::string fp8_model_dir() { return fixtures() + "/tiny-qwen3vl-fp8"; }
inline std::string moe_experts_model_dir() { return fixtures() + "/tiny-qwen3vl-moe-experts"; }
inline std::string moe_fp8_model_dir() { return fixtures() + "/tiny-qwen3vl-moe-fp8"; }

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline const nlohmann::json& manifest() {
  static const nlohmann::json m = nlohmann::json::parse(slurp(fixtures() + "/golden/manifest.json"));
  return m;
}
inline const nlohmann::json& fp8_manifest() {
  static const nlohmann::json m = nlohmann::json::parse(slurp(fixtures() + "/golden-fp8/manifest.json"));
  return m;
}
inline const nlohmann::json& moe_manifest() {
  static const nlohmann::json m = nlohmann::json::parse(slurp(fixtures() + "/golden-moe/manifest.json"));
  return m;
}

struct Tensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<float> f;    // F32
  std::vector<int64_t> i;  // I64
  std::vector<uint8_t> u;  // U8
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

class File {
 public:
  explicit File(const std::string& path) {
    const std::string bytes = slurp(path);
    uint64_t header_len = 0;
    std::memcpy(&header_len, bytes.data(), 8);
    const nlohmann::json h = nlohmann::json::parse(bytes.substr(8, header_len));
    const char* data = bytes.data() + 8 + header_len;
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      Tensor t;
      t.dtype = it.value()["dtype"];
      t.shape = it.value()["shape"].get<std::vector<int64_t>>();
      const auto off = it.value()["data_offsets"].get<std::vector<size_t>>();
      const char* p = data + off[0];
      const size_t n = off[1] - off[0];
      if (t.dtype == "F32") {
        t.f.resize(n / 4);
        std::memcpy(t.f.data(), p, n);
      } else if (t.dtype == "I64") {
        t.i.resize(n / 8);
        std::memcpy(t.i.data(), p, n);
      } else if (t.dtype == "U8") {
        t.u.assign(p, p + n);
      }
      tensors_[it.key()] = std::move(t);
    }
  }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  const Tensor& operator[](const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw std::runtime_error("golden tensor missing: " + name);
    return it->second;
  }

 private:
  std::map<std::string, Tensor> tensors_;
};

// A golden file of tests/fixtures/<dir>: "golden" (the dense model) or
// "golden-moe" (the mixture-of-experts one). The names are views, so a
// caller's temporary string is never a reference argument of a function
// that returns a reference (the File lives in the cache).
inline const File& file(std::string_view name, std::string_view dir = "golden") {
  static std::map<std::string, File> cache;
  const std::string path = fixtures() + "/" + std::string(dir) + "/" + std::string(name);
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, File(path)).first;
  return it->second;
}
// The same, named by a manifest entry (a JSON string).
template <std::same_as<nlohmann::json> Json>
inline const File& file(const Json& name, std::string_view dir = "golden") {
  return file(name.template get<std::string>(), dir);
}

// |got - want| <= atol + rtol*|want| everywhere; reports the worst element.
inline ::testing::AssertionResult close(const std::string& stage, const float* got, const std::vector<float>& want,
                                        double atol, double rtol) {
  double worst = -1, worst_excess = -1e30;
  size_t at = 0, bad = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    const double d = std::fabs(double(got[k]) - want[k]);
    const double excess = d - (atol + rtol * std::fabs(want[k]));
    if (!(excess <= 0)) ++bad;
    if (excess > worst_excess || std::isnan(d)) {
      worst_excess = std::isnan(d) ? 1e30 : excess;
      worst = d;
      at = k;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << stage << ": " << bad << " of " << want.size()
                                       << " values out of tolerance; worst at flat index " << at << ": got " << got[at]
                                       << ", want " << want[at] << " (|diff| " << worst << ", atol " << atol
                                       << ", rtol " << rtol << ")";
}

// sqrt(Σ(got - want)²) / sqrt(Σ want²) over want.size() values.
inline double rel_rms(const float* got, const std::vector<float>& want) {
  double se = 0, sw = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    se += (double(got[k]) - want[k]) * (double(got[k]) - want[k]);
    sw += double(want[k]) * want[k];
  }
  return std::sqrt(se / sw);
}

inline double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t k = 0; k < n; ++k) m = std::max(m, std::fabs(double(a[k]) - b[k]));
  return m;
}

inline int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t k = 1; k < n; ++k)
    if (x[k] > x[best]) best = k;
  return best;
}

}  // namespace qvl::golden
