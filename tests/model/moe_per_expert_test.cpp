// The MoE checkpoint with its experts stored one by one, as Qwen's FP8
// releases of MoE models store them (mlp.experts.N.{gate,up,down}_proj.weight),
// against the fused layout of the bf16 masters (tests/fixtures/
// tiny-qwen3vl-moe-experts and -fp8, made from tiny-qwen3vl-moe by
// tools/make_moe_per_expert_fixture.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "../io/io_test_util.h"
#include "golden.h"
#include "io/safetensors_writer.h"
#include "ops/scalar.h"
#include "prompt_runner.h"
#include "tiny_model.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDir = "golden-moe";

// The same bf16 weights in either layout are the same matrices, so every
// logit and greedy token is identical (bit for bit: same values, same kernels).
TEST(MoePerExpert, Bf16LayoutGivesTheFusedModelsLogitsExactly) {
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8}) {
    SCOPED_TRACE(weight_format_name(f));
    Model& fused = golden::tiny_moe(f);
    Model& split = golden::tiny(f, golden::moe_experts_model_dir());
    EXPECT_TRUE(split.weights().unused.empty());
    for (const auto& p : golden::moe_manifest()["prompts"]) {
      SCOPED_TRACE(p["name"].get<std::string>());
      const golden::PromptRun a = golden::run_prompt(fused, p, 16, false, true, KvType::F32, kDir);
      const golden::PromptRun b = golden::run_prompt(split, p, 16, false, true, KvType::F32, kDir);
      EXPECT_EQ(a.generated, b.generated);
      ASSERT_EQ(a.gen_logits.size(), b.gen_logits.size());
      for (size_t s = 0; s < a.gen_logits.size(); ++s) EXPECT_EQ(a.gen_logits[s], b.gen_logits[s]) << "step " << s;
    }
  }
}

// The FP8 experts (F8_E4M3 + block scales stored as BF16, F16 and F32 in
// different layers) dequantize exactly to the fused f32 values the fixture
// script computed.
TEST(MoePerExpert, Fp8ExpertsDequantizeExactly) {
  const golden::File& want = golden::file("experts_dequant.safetensors", "tiny-qwen3vl-moe-fp8");
  Model& m = golden::tiny(WeightFormat::F32, golden::moe_fp8_model_dir());
  EXPECT_TRUE(m.weights().unused.empty());
  const TextConfig& c = m.config().text;
  const int64_t E = c.num_experts, H = c.hidden_size, I = c.moe_intermediate_size;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const std::string p = "model.language_model.layers." + std::to_string(l) + ".mlp.experts.";
    const golden::Tensor& gate_up = want[p + "gate_up_proj"];  // [E, H, 2I], x @ W
    const golden::Tensor& down = want[p + "down_proj"];        // [E, I, H]
    const MoeMlpWeights& w = m.weights().text.layers[l].mlp.moe;
    ASSERT_EQ(static_cast<int64_t>(w.gate.size()), E);
    EXPECT_EQ(w.router.format(), WeightFormat::F32);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t i = 0; i < I; ++i)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t row = (e * H + h) * 2 * I;
          ASSERT_EQ(scalar::weight_at(w.gate[e], i, h), gate_up.f[row + i]) << "expert " << e;
          ASSERT_EQ(scalar::weight_at(w.up[e], i, h), gate_up.f[row + I + i]) << "expert " << e;
          ASSERT_EQ(scalar::weight_at(w.down[e], h, i), down.f[(e * I + i) * H + h]) << "expert " << e;
        }
  }
}

// The fused checkpoint with its experts replaced by the FP8 experts'
// dequantized values (F32 tensors, which the loader reads exactly in the f32
// format): the FP8 per-expert model loaded as f32 must give its logits and
// greedy tokens bit for bit.
TEST(MoePerExpert, Fp8LayoutIsTheFusedModelOfItsDequantizedExperts) {
  test::TempDir dir;
  const std::string src = golden::moe_model_dir(), shard = "model-00002-of-00002.safetensors";
  for (const auto& e : fs::directory_iterator(src))
    if (e.path().filename() != shard) fs::copy_file(fs::canonical(e.path()), dir / e.path().filename().string());
  {
    const SafeTensors st = SafeTensors::open(src + "/" + shard);
    const SafeTensors dequant = SafeTensors::open(golden::moe_fp8_model_dir() + "/experts_dequant.safetensors");
    std::vector<TensorInfo> infos;
    std::vector<std::vector<uint8_t>> data;
    for (const auto& [name, v] : st.tensors()) {
      const TensorView* d = dequant.find(name);
      const TensorView& t = d ? *d : v;
      infos.push_back({name, t.dtype, t.shape});
      data.emplace_back(t.data, t.data + t.nbytes);
    }
    write_safetensors(dir / shard, infos, data);
  }
  ModelLoadOptions o;
  o.format = WeightFormat::F32;
  o.max_batch = 64;
  const std::unique_ptr<Model> fused = Model::load(dir.path(), o, golden::pool());
  Model& fp8 = golden::tiny(WeightFormat::F32, golden::moe_fp8_model_dir());
  for (const auto& p : golden::moe_manifest()["prompts"]) {
    SCOPED_TRACE(p["name"].get<std::string>());
    const golden::PromptRun a = golden::run_prompt(*fused, p, 16, false, true, KvType::F32, kDir);
    const golden::PromptRun b = golden::run_prompt(fp8, p, 16, false, true, KvType::F32, kDir);
    EXPECT_EQ(a.generated, b.generated);
    ASSERT_EQ(a.gen_logits.size(), b.gen_logits.size());
    for (size_t s = 0; s < a.gen_logits.size(); ++s) EXPECT_EQ(a.gen_logits[s], b.gen_logits[s]) << "step " << s;
  }
}

// FP8 experts against the bf16 fused master, end to end: only the experts'
// quantization separates them. This tiny model is built to be chaotic (its
// logits have std ~50 and move ~18 when the dense model's text weights are
// merely rounded to bf16, golden-fp8's sensitivity report), so FP8 experts
// change its greedy tokens; the bound is on the relative rms error of the
// last prompt logits, measured 0.10-0.32 (f32) and 0.11-0.36 (q8) here and
// printed as a table. On the portable path (QVL_SIMD_TARGET=EMU128), whose
// f32 reductions run in another order, q8's two_turn measured 0.60 (f32
// unchanged; q8 rounds activations to codes, so last-bit differences can
// move whole codes, and the router amplifies them): the bound is 0.75, still
// far below the ~1.4 of unrelated logits of the same spread.
TEST(MoePerExpert, Fp8LayoutStaysCloseToTheFusedBf16Model) {
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::Q8}) {
    SCOPED_TRACE(weight_format_name(f));
    Model& fused = golden::tiny_moe(f);
    Model& fp8 = golden::tiny(f, golden::moe_fp8_model_dir());
    const int64_t vocab = fused.config().text.vocab_size;
    for (const auto& p : golden::moe_manifest()["prompts"]) {
      const std::string name = p["name"];
      SCOPED_TRACE(name);
      const golden::PromptRun a = golden::run_prompt(fused, p, 16, false, false, KvType::F32, kDir);
      const golden::PromptRun b = golden::run_prompt(fp8, p, 16, false, false, KvType::F32, kDir);
      const double rel = golden::rel_rms(b.logits_last.data(), a.logits_last);
      const double max_abs = golden::max_abs_diff(a.logits_last.data(), b.logits_last.data(), vocab);
      int equal = 0;
      while (equal < 16 && a.generated[equal] == b.generated[equal]) ++equal;
      std::printf("%s fp8 experts vs fused bf16 %-14s max|dlogit_last| %7.3f rel rms %.4f greedy equal %2d/16\n",
                  weight_format_name(f), name.c_str(), max_abs, rel, equal);
      EXPECT_LT(rel, 0.75);
    }
  }
}

}  // namespace
}  // namespace qvl
