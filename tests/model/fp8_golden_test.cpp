// The FP8 checkpoint (tests/fixtures/tiny-qwen3vl-fp8, golden-fp8): the tiny
// dense model with its 28 text linears stored as F8_E4M3 + BF16 128×128
// block scales, all ragged, 12 over two blocks. The goldens are transformers'
// float32 forward on the dequantized weights, so f32 loading must match them
// to the dense tolerances; q8 quantizes the dequantized values again (the
// error bounds of matmul.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "golden.h"
#include "ops/ops.h"
#include "ops/scalar.h"
#include "prompt_runner.h"
#include "tiny_model.h"

namespace qvl {
namespace {

constexpr const char* kDir = "golden-fp8";

Model& fp8(WeightFormat f) { return golden::tiny(f, golden::fp8_model_dir()); }

TEST(Fp8, E4m3DecodeTableIsTheReferences) {
  const golden::Tensor& t = golden::file("fp8_dequant.safetensors", kDir)["e4m3_decode_table"];
  ASSERT_EQ(t.numel(), 256);
  for (int v = 0; v < 256; ++v) {
    const float got = e4m3_to_f32(static_cast<uint8_t>(v));
    if (std::isnan(t.f[v])) {
      EXPECT_TRUE(std::isnan(got)) << "code " << v;
      EXPECT_TRUE(e4m3_is_nan(static_cast<uint8_t>(v))) << "code " << v;
    } else {
      EXPECT_EQ(got, t.f[v]) << "code " << v;  // exact, sign of zero included
      EXPECT_EQ(std::signbit(got), std::signbit(t.f[v])) << "code " << v;
      EXPECT_FALSE(e4m3_is_nan(static_cast<uint8_t>(v))) << "code " << v;
    }
  }
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0xff)));
}

// f32 loading keeps the dequantized weights exactly; q8 within half a step
// of its group scale (d <= max|w| / 127 rounded up to f16, so the error is at
// most ~max|w| / 254 of the 32 weights).
TEST(Fp8, DequantizedWeightsAreTheReferences) {
  const golden::File& f = golden::file("fp8_dequant.safetensors", kDir);
  struct Case {
    const char* name;
    int layer;
    const Linear& (*get)(const TextLayerWeights&);
  };
  const Case cases[] = {
      {"model.language_model.layers.0.mlp.gate_proj.weight", 0,
       [](const TextLayerWeights& l) -> const Linear& { return l.mlp.gate; }},
      {"model.language_model.layers.0.self_attn.q_proj.weight", 0,
       [](const TextLayerWeights& l) -> const Linear& { return l.q; }},
      {"model.language_model.layers.3.mlp.down_proj.weight", 3,
       [](const TextLayerWeights& l) -> const Linear& { return l.mlp.down; }},
  };
  for (WeightFormat format : {WeightFormat::F32, WeightFormat::Q8, WeightFormat::BF16}) {
    const Model& m = fp8(format);
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(weight_format_name(format)) + " " + c.name);
      const golden::Tensor& want = f[std::string("dequant.") + c.name];
      const WeightMatrix& w = c.get(m.weights().text.layers[c.layer]).w;
      ASSERT_EQ(w.format(), format);
      ASSERT_EQ(w.rows(), want.shape[0]);
      ASSERT_EQ(w.cols(), want.shape[1]);
      const int64_t cols = w.cols();
      double worst = 0;
      for (int64_t r = 0; r < w.rows(); ++r) {
        for (int64_t g = 0; g < cols; g += 32) {
          float amax = 0;
          for (int64_t k = g; k < std::min(cols, g + 32); ++k) amax = std::max(amax, std::fabs(want.f[r * cols + k]));
          // f32 exact; bf16 one rounding (2^-9 relative); q8 half a step.
          const double bound = format == WeightFormat::F32 ? 0.0 : format == WeightFormat::BF16 ? amax / 256.0
                                                                                                : amax / 127.0 * 0.51;
          for (int64_t k = g; k < std::min(cols, g + 32); ++k) {
            const double d = std::fabs(double(scalar::weight_at(w, r, k)) - want.f[r * cols + k]);
            worst = std::max(worst, d);
            ASSERT_LE(d, bound) << "element [" << r << ", " << k << "]";
          }
        }
      }
      std::printf("%s %s max|dw| %.3g\n", weight_format_name(format), c.name, worst);
    }
  }
}

// Everything the dense goldens check, on the FP8 checkpoint loaded as f32:
// hidden states of every layer, logits, and the 16 greedy tokens.
TEST(Fp8Golden, F32EveryPromptCase) {
  Model& model = fp8(WeightFormat::F32);
  const nlohmann::json& m = golden::fp8_manifest();
  const auto& tols = m["tolerances"];
  const double h_atol = tols["hidden.*"]["atol"], h_rtol = tols["hidden.*"]["rtol"];
  const double l_atol = tols["logits"]["atol"];
  const int64_t vocab = model.config().text.vocab_size;
  for (const auto& p : m["prompts"]) {
    const std::string name = p["name"];
    SCOPED_TRACE(name);
    const golden::File& f = golden::file(p["file"], kDir);
    golden::PromptRun r = golden::run_prompt(model, p, 16, true, false, KvType::F32, kDir);
    ASSERT_EQ(r.ids, golden::ids_of(f["input_ids"]));
    std::printf("f32 %-14s max|dlogit_last| %.4f\n", name.c_str(),
                golden::max_abs_diff(r.logits_last.data(), f["logits_last"].f.data(), vocab));
    if (p["has_hidden_states"]) golden::expect_hidden_states(r, f, model.config().text.num_hidden_layers, h_atol, h_rtol);
    EXPECT_TRUE(golden::close("logits_last", r.logits_last.data(), f["logits_last"].f, l_atol, 0));
    golden::expect_selected_logits(model, r, f, l_atol);
    golden::expect_greedy_tokens(r, f, l_atol);
  }
}

// q8 on this deliberately chaotic model (quant_golden_test.cpp says why a
// q8 model cannot keep its greedy tokens): the logits' relative rms error is
// bounded as for the bf16 checkpoint's q8 (0.6), greedy tokens must match
// wherever the reference margin exceeds twice the measured error, and the
// table is printed.
TEST(Fp8Golden, Q8LogitErrorTable) {
  Model& model = fp8(WeightFormat::Q8);
  const int64_t vocab = model.config().text.vocab_size;
  for (const auto& p : golden::fp8_manifest()["prompts"]) {
    const std::string name = p["name"];
    SCOPED_TRACE(name);
    const golden::File& f = golden::file(p["file"], kDir);
    golden::PromptRun r = golden::run_prompt(model, p, 16, false, false, KvType::F32, kDir);
    const std::vector<float>& want = f["logits_last"].f;
    const double max_abs = golden::max_abs_diff(r.logits_last.data(), want.data(), vocab);
    const double rel = golden::rel_rms(r.logits_last.data(), want);
    EXPECT_LT(rel, 0.6);
    const golden::Tensor& gen = f["generated_ids"];
    const golden::Tensor& margin = f["gen_margin"];
    int equal = 0;
    for (int s = 0; s < 16; ++s) {
      if (r.generated[s] != gen.i[s]) {
        EXPECT_LE(margin.f[s], 2 * max_abs) << "step " << s << " differs although the reference margin is "
                                            << margin.f[s];
        break;
      }
      ++equal;
    }
    std::printf("q8 fp8 %-14s max|dlogit_last| %8.3f rel rms %.4f greedy equal %2d/16\n", name.c_str(), max_abs, rel,
                equal);
  }
}

}  // namespace
}  // namespace qvl
