// MatmulPrecision::Fast (bf16 weights, activations rounded to bf16 in
// prefill and vision products) against the float32 reference.
//
// Every vision product has m = the image's patches or merged tokens (> 8), as
// has text prefill of every golden prompt, so the fast kernel runs throughout
// them; decode steps (m = 1) stay exact. The tiny model is built to amplify
// errors (see quant_golden_test.cpp: q8 on the q/k projections alone moves its
// logits by ~18), so the bounds below are what rounding activations to 8
// significant bits measures on it, with ~2x margin - far looser than the exact
// path's golden tolerances, which the fast mode does not meet (and is not
// meant to).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "golden.h"
#include "prompt_runner.h"
#include "tiny_model.h"

namespace qvl {
namespace {

// Loaded as where Fast pays, so the fast kernel runs on every CPU that has it
// (on one where it does not pay, a load left to measure takes Exact:
// LoadedAsAskedFor).
std::unique_ptr<Model> load_fast(std::optional<bool> pays) {
  ModelLoadOptions o;
  o.format = WeightFormat::BF16;
  o.precision = MatmulPrecision::Fast;
  o.fast_bf16_pays = pays;
  o.max_batch = 64;
  return Model::load(golden::model_dir(), o, golden::pool());
}

Model& tiny_fast() {
  static std::unique_ptr<Model> m = load_fast(true);
  return *m;
}

using golden::rel_rms;

// Relative rms error against the reference, measured on the public fixtures
// (Zen 4): patch embedding (one product) 0.0003-0.0021; merger and DeepStack
// features 0.0030-0.0039 over the fixture images. Bounds with >= 2x margin
// (relative, so they carry over to another checkpoint of the same kind).
constexpr double kPatchEmbedRelRms = 0.005;
constexpr double kVisionRelRms = 0.01;
// Text, measured: hidden state after layer 0 0.006-0.015, final-normed
// hidden states 0.022-0.089 (prompts whose golden file has them), last
// logits 0.024-0.078 relative rms (max |difference| 4.9-18.0, printed only:
// logits have std ~50, |max| ~250 on this model). A broken kernel gives
// O(1) relative errors everywhere (measured 1.2-1.6 with x's pair halves
// swapped).
constexpr double kLayer0RelRms = 0.04;
constexpr double kFinalNormRelRms = 0.2;
constexpr double kLogitsRelRms = 0.2;

// The rule, against both decisions and the measured one: Fast bf16 matrices
// where Fast pays, Exact ones where it does not; the fast kernel runs where
// it pays and the CPU has it.
TEST(FastPrecisionGolden, LoadedAsAskedFor) {
  for (std::optional<bool> pays : {std::optional<bool>(true), std::optional<bool>(false), std::optional<bool>()}) {
    const bool decided = pays.value_or(matmul_fast_bf16_pays());  // timed once per process
    SCOPED_TRACE(pays ? (*pays ? "pays" : "does not pay") : "measured");
    std::unique_ptr<Model> m = load_fast(pays);
    const MatmulPrecision want = decided ? MatmulPrecision::Fast : MatmulPrecision::Exact;
    EXPECT_EQ(m->precision(), MatmulPrecision::Fast);  // as asked for
    EXPECT_EQ(m->fast_matmul(), decided && matmul_fast_bf16_supported());
    EXPECT_EQ(m->weights().vision.blocks[0].fc1.w.precision(), want);
    EXPECT_EQ(m->weights().text.layers[0].q.w.precision(), want);
  }
  EXPECT_EQ(golden::tiny(WeightFormat::BF16).weights().text.layers[0].q.w.precision(), MatmulPrecision::Exact);
  // Other formats carry the setting without effect.
  ModelLoadOptions o;
  o.format = WeightFormat::F32;
  o.precision = MatmulPrecision::Fast;
  o.fast_bf16_pays = true;
  EXPECT_FALSE(Model::load(golden::model_dir(), o, golden::pool())->fast_matmul());
}

TEST(FastPrecisionGolden, VisionFeaturesOfEveryImage) {
  Model& model = tiny_fast();
  for (const auto& [name, img] : golden::manifest()["images"].items()) {
    SCOPED_TRACE(name);
    const golden::File& f = golden::file(img["file"]);
    const VisionInput in{f["pixel_values"].f.data(), golden::grids_of(f["image_grid_thw"])[0]};
    VisionTrace trace;
    const VisionFeatures out = model.vision().encode({&in, 1}, golden::pool(), &trace);
    const double pe = rel_rms(trace.patch_embed.data(), f["vision.patch_embed"].f);
    const double mg = rel_rms(out.embeds.data(), f["vision.merger"].f);
    double ds = 0;
    for (size_t k = 0; k < out.deepstack.size(); ++k)
      ds = std::max(ds, rel_rms(out.deepstack[k].data(), f["vision.deepstack." + std::to_string(k)].f));
    std::printf("fast %-16s patch_embed %.5f merger %.5f deepstack (worst) %.5f\n", name.c_str(), pe, mg, ds);
    EXPECT_LT(pe, kPatchEmbedRelRms);
    EXPECT_LT(mg, kVisionRelRms);
    EXPECT_LT(ds, kVisionRelRms);
    // Where the CPU has it (tiny_fast() decides it pays).
    if (model.fast_matmul()) {
      EXPECT_GT(pe, 1e-4) << "the fast kernel did not run (patch embedding exact)";
    }
  }
}

// Text prefill (every golden prompt is > 8 tokens, so its products take the
// fast kernel): hidden states after layer 0 and the final norm, and the last
// position's logits. Greedy continuations are printed, not required: decode
// reads the K/V the fast prefill wrote, and on this model a logit error of a
// few units already flips later steps (as with q8, quant_golden_test.cpp).
TEST(FastPrecisionGolden, PromptHiddenStatesAndLogits) {
  Model& model = tiny_fast();
  const int64_t vocab = model.config().text.vocab_size;
  for (const auto& p : golden::manifest()["prompts"]) {
    const std::string name = p["name"];
    SCOPED_TRACE(name);
    const golden::File& f = golden::file(p["file"]);
    golden::PromptRun r = golden::run_prompt(model, p, 16, true, false);
    ASSERT_GT(r.ids.size(), 8u);  // prefill is a GEMM
    // Not every prompt's golden file holds the hidden states.
    const double l0 = f.has("hidden.layer_out.0") ? rel_rms(r.trace.layer_out[0].data(), f["hidden.layer_out.0"].f) : 0;
    const double fin = f.has("hidden.final_norm") ? rel_rms(r.hidden.data(), f["hidden.final_norm"].f) : 0;
    const std::vector<float>& want = f["logits_last"].f;
    double max_abs = 0;
    for (int64_t k = 0; k < vocab; ++k) max_abs = std::max(max_abs, std::fabs(double(r.logits_last[k]) - want[k]));
    const double rel = rel_rms(r.logits_last.data(), want);
    int equal = 0;
    while (equal < 16 && r.generated[equal] == f["generated_ids"].i[equal]) ++equal;
    std::printf("fast %-22s layer0 %.5f final_norm %.5f logits_last rel %.5f max|d| %.3f, greedy equal %d/16\n",
                name.c_str(), l0, fin, rel, max_abs, equal);
    EXPECT_LT(l0, kLayer0RelRms);
    EXPECT_LT(fin, kFinalNormRelRms);
    EXPECT_LT(rel, kLogitsRelRms);
    // The first token is decided by logits_last: it must match where the
    // reference margin exceeds twice their measured error.
    if (f["gen_margin"].f[0] > 2 * max_abs) {
      EXPECT_EQ(r.generated[0], f["generated_ids"].i[0]);
    }
  }
}

}  // namespace
}  // namespace qvl
