// FP8 block dequantization (model/fp8_weights.h) on made-up tensors: ragged
// 128×128 blocks, scales in BF16, F16 and F32, and the errors a corrupt
// checkpoint gets, each naming the tensor and its file; then the loader's
// own refusals on a copy of the FP8 fixture with one thing broken.
#include "model/fp8_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "../io/io_test_util.h"
#include "golden.h"
#include "io/random_model.h"
#include "io/safetensors_writer.h"
#include "ops/scalar.h"
#include "util/mapped_file.h"
#include "model/model.h"
#include "ops/ops.h"
#include "tiny_model.h"

namespace qvl {
namespace {

using test::expect_error;
namespace fs = std::filesystem;

const std::string kFile = "/m/model.safetensors";

TensorView view(const std::string& name, DType dtype, std::vector<int64_t> shape, const std::vector<uint8_t>& bytes) {
  TensorView v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data = bytes.data();
  v.nbytes = bytes.size();
  v.file = &kFile;
  return v;
}

// Scales [2, 2] stored as `dtype`, each a power of two times 1.5 (exact in all three).
std::vector<uint8_t> scale_bytes(DType dtype, const float (&s)[4]) {
  std::vector<uint8_t> out(4 * dtype_size(dtype));
  for (int i = 0; i < 4; ++i) {
    if (dtype == DType::F32) {
      std::memcpy(out.data() + 4 * i, &s[i], 4);
    } else {
      const uint16_t h = dtype == DType::BF16 ? f32_to_bf16(s[i]) : f32_to_f16(s[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

TEST(Fp8Dequant, RaggedBlocksInEveryScaleDtype) {
  constexpr int64_t rows = 130, cols = 200;  // blocks [128, 2] x [128, 72]
  std::mt19937 rng(7);
  std::vector<uint8_t> codes(rows * cols);
  for (uint8_t& c : codes) {
    do c = static_cast<uint8_t>(rng());
    while (e4m3_is_nan(c));
  }
  const float s[4] = {1.5f, 0.375f, 3.0f * 1024, 1.5f / 4096};
  const Fp8Quantization q;
  const TensorView w = view("x.weight", DType::F8_E4M3, {rows, cols}, codes);
  for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
    SCOPED_TRACE(dtype_name(dt));
    const std::vector<uint8_t> sb = scale_bytes(dt, s);
    const TensorView sv = view("x.weight_scale_inv", dt, {2, 2}, sb);
    std::vector<float> out(rows * cols);
    ThreadPool pool(2);
    dequantize_fp8(w, sv, q, rows, cols, out.data(), &pool);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(out[r * cols + c], e4m3_to_f32(codes[r * cols + c]) * s[(r / 128) * 2 + c / 128])
            << "[" << r << ", " << c << "]";
  }
}

TEST(Fp8Dequant, CorruptTensorsAreClearErrors) {
  const Fp8Quantization q;
  std::vector<uint8_t> codes(130 * 200, 0x38);
  const float s[4] = {1, 1, 1, 1};
  const std::vector<uint8_t> sb = scale_bytes(DType::F32, s);
  const TensorView sv = view("x.weight_scale_inv", DType::F32, {2, 2}, sb);
  std::vector<float> out(130 * 200);
  for (uint8_t nan : {uint8_t{0x7f}, uint8_t{0xff}}) {
    codes[129 * 200 + 150] = nan;
    const TensorView w = view("x.weight", DType::F8_E4M3, {130, 200}, codes);
    expect_error([&] { dequantize_fp8(w, sv, q, 130, 200, out.data(), nullptr); },
                 {"tensor x.weight in /m/model.safetensors", "element [129, 150]", nan == 0x7f ? "0x7F" : "0xFF",
                  "NaN"});
  }
  codes[129 * 200 + 150] = 0x38;
  const TensorView w = view("x.weight", DType::F8_E4M3, {130, 200}, codes);
  const TensorView short_scale = view("x.weight_scale_inv", DType::F32, {1, 2}, sb);
  expect_error([&] { dequantize_fp8(w, short_scale, q, 130, 200, out.data(), nullptr); },
               {"tensor x.weight_scale_inv in /m/model.safetensors", "[1, 2]", "need [2, 2]"});
  const std::vector<uint8_t> ints(16);
  const TensorView int_scale = view("x.weight_scale_inv", DType::I32, {2, 2}, ints);
  expect_error([&] { dequantize_fp8(w, int_scale, q, 130, 200, out.data(), nullptr); },
               {"x.weight_scale_inv", "I32", "BF16, F16 or F32"});
  const float bad[4] = {1, 0, 1, 1};
  const std::vector<uint8_t> zero = scale_bytes(DType::F32, bad);
  const TensorView zero_scale = view("x.weight_scale_inv", DType::F32, {2, 2}, zero);
  expect_error([&] { dequantize_fp8(w, zero_scale, q, 130, 200, out.data(), nullptr); },
               {"x.weight_scale_inv", "scale 1 is 0", "finite and positive"});
  const TensorView bf16_weight = view("x.weight", DType::BF16, {130, 100}, codes);
  expect_error([&] { dequantize_fp8(bf16_weight, sv, q, 130, 100, out.data(), nullptr); },
               {"x.weight", "BF16", "must be F8_E4M3"});
}

// A copy of the FP8 fixture folder (symlinks followed) with `edit` applied
// to the checkpoint's tensors, then loaded.
void load_broken_copy(const std::function<void(std::vector<TensorInfo>&, std::vector<std::vector<uint8_t>>&)>& edit,
                      bool drop_quantization_config, const std::vector<std::string>& needles) {
  test::TempDir dir;
  for (const auto& e : fs::directory_iterator(golden::fp8_model_dir()))
    fs::copy_file(fs::canonical(e.path()), dir / e.path().filename().string());
  if (drop_quantization_config) {
    nlohmann::json c = nlohmann::json::parse(golden::slurp(dir / "config.json"));
    c.erase("quantization_config");
    test::write_bytes(dir / "config.json", c.dump());
  }
  {
    const SafeTensors st = SafeTensors::open(dir / "model.safetensors");
    std::vector<TensorInfo> infos;
    std::vector<std::vector<uint8_t>> data;
    for (const auto& [name, v] : st.tensors()) {
      infos.push_back({name, v.dtype, v.shape});
      data.emplace_back(v.data, v.data + v.nbytes);
    }
    edit(infos, data);
    write_safetensors(dir / "rewritten.safetensors", infos, data);
  }
  fs::rename(dir / "rewritten.safetensors", dir / "model.safetensors");
  expect_error(
      [&] {
        ModelLoadOptions o;
        o.format = WeightFormat::F32;
        Model::load(dir.path(), o, golden::pool());
      },
      needles);
}

size_t index_of(const std::vector<TensorInfo>& infos, const std::string& name) {
  for (size_t i = 0; i < infos.size(); ++i)
    if (infos[i].name == name) return i;
  throw std::runtime_error("no tensor " + name);
}

TEST(Fp8Load, BrokenCheckpointsAreClearErrors) {
  const std::string q = "model.language_model.layers.1.self_attn.q_proj.weight";
  auto keep = [](std::vector<TensorInfo>&, std::vector<std::vector<uint8_t>>&) {};
  // The loader meets layer 0's q_proj first.
  load_broken_copy(keep, true,
                   {"model.language_model.layers.0.self_attn.q_proj.weight", "model.safetensors", "F8_E4M3",
                    "no quantization_config"});
  load_broken_copy(
      [&](std::vector<TensorInfo>& infos, std::vector<std::vector<uint8_t>>& data) {
        const size_t i = index_of(infos, q + "_scale_inv");
        infos.erase(infos.begin() + i);
        data.erase(data.begin() + i);
      },
      false, {q, "model.safetensors", "no " + q + "_scale_inv"});
  load_broken_copy(
      [&](std::vector<TensorInfo>& infos, std::vector<std::vector<uint8_t>>& data) {
        data[index_of(infos, q)][3 * 64 + 5] = 0x7f;
      },
      false, {q, "model.safetensors", "element [3, 5]", "NaN"});
  // A BF16 weight beside a scale: the scale would silently go unused.
  const std::string k = "model.language_model.layers.2.self_attn.k_proj.weight";
  load_broken_copy(
      [&](std::vector<TensorInfo>& infos, std::vector<std::vector<uint8_t>>& data) {
        const size_t i = index_of(infos, k);
        infos[i].dtype = DType::BF16;
        data[i].resize(data[i].size() * 2);
      },
      false, {k, "is BF16 but has an FP8 block scale"});
}

}  // namespace
}  // namespace qvl

namespace qvl {
namespace {

// make_random_model --fp8 (the 2B measurements' folder) on the tiny and MoE
// configs: it loads, every FP8 weight is the random N(0, 0.02) value within
// E4M3's rounding (3 mantissa bits: 1/16 relative, or the subnormal step).
TEST(Fp8Load, RandomFp8FoldersLoad) {
  for (const std::string& like : {golden::model_dir(), golden::moe_model_dir()}) {
    SCOPED_TRACE(like);
    test::TempDir dir;
    RandomModelOptions opt;
    opt.like_dir = like;
    opt.fp8 = true;
    make_random_model(dir.path(), read_file(like + "/config.json"), opt);
    ModelLoadOptions o;
    o.format = WeightFormat::F32;
    const std::unique_ptr<Model> m = Model::load(dir.path(), o, golden::pool());
    EXPECT_TRUE(m->weights().unused.empty());
    const TextLayerWeights& l = m->weights().text.layers[1];
    const WeightMatrix& w = l.mlp.sparse ? l.mlp.moe.down[3] : l.mlp.down.w;
    const std::string name = l.mlp.sparse ? "model.language_model.layers.1.mlp.experts.3.down_proj.weight"
                                          : "model.language_model.layers.1.mlp.down_proj.weight";
    std::vector<uint8_t> want(static_cast<size_t>(w.rows() * w.cols()) * 2);
    fill_random_weights({name, DType::BF16, {w.rows(), w.cols()}}, 0, 0, want);
    for (int64_t i = 0; i < w.rows() * w.cols(); ++i) {
      uint16_t b;
      std::memcpy(&b, want.data() + 2 * i, 2);
      const float v = bf16_to_f32(b), got = scalar::weight_at(w, i / w.cols(), i % w.cols());
      ASSERT_LE(std::fabs(got - v), std::max(std::fabs(v) / 16, kRandomFp8Scale * std::ldexp(1.0f, -9)))
          << name << " element " << i;
    }
  }
}

}  // namespace
}  // namespace qvl
