// The text decoder against the reference for every prompt case, f32 and bf16
// weights: per-layer hidden states (where recorded), logits at selected
// positions and at the last one, top-1 at every prompt position, and the 16
// greedy tokens exactly.
#include <gtest/gtest.h>

#include "golden.h"
#include "prompt_runner.h"
#include "tiny_model.h"

namespace qvl {
namespace {

class TextGolden : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(TextGolden, EveryPromptCase) {
  Model& model = golden::tiny(GetParam());
  const auto& tols = golden::manifest()["tolerances"];
  const double h_atol = tols["hidden.*"]["atol"], h_rtol = tols["hidden.*"]["rtol"];
  const double l_atol = tols["logits"]["atol"];
  const int64_t hid = model.config().text.hidden_size, vocab = model.config().text.vocab_size;
  for (const auto& p : golden::manifest()["prompts"]) {
    const std::string name = p["name"];
    SCOPED_TRACE(name);
    const golden::File& f = golden::file(p["file"]);
    const bool hidden = p["has_hidden_states"];
    golden::PromptRun r = golden::run_prompt(model, p, 16, hidden, false);
    const int64_t n = static_cast<int64_t>(r.ids.size());

    if (hidden) {
      EXPECT_TRUE(golden::close("hidden.inputs_embeds", r.trace.inputs_embeds.data(), f["hidden.inputs_embeds"].f,
                                h_atol, h_rtol));
      for (int l = 0; l < model.config().text.num_hidden_layers; ++l) {
        const std::string lo = "hidden.layer_out." + std::to_string(l);
        const std::string al = "hidden.hidden_after_layer." + std::to_string(l);
        EXPECT_TRUE(golden::close(lo, r.trace.layer_out[l].data(), f[lo].f, h_atol, h_rtol));
        EXPECT_TRUE(golden::close(al, r.trace.after_layer[l].data(), f[al].f, h_atol, h_rtol));
      }
      EXPECT_TRUE(golden::close("hidden.final_norm", r.hidden.data(), f["hidden.final_norm"].f, h_atol, h_rtol));
    }

    EXPECT_TRUE(golden::close("logits_last", r.logits_last.data(), f["logits_last"].f, l_atol, 0));

    // Logits at every prompt position (16 rows at a time) for f32; the bf16
    // run checks the selected positions only, to keep the suite fast.
    const golden::Tensor& sel = f["logits_sel_positions"];
    const golden::Tensor& top = f["prompt_top_ids"];
    const bool every_position = GetParam() == WeightFormat::F32;
    std::vector<float> logits(16 * vocab);
    for (int64_t r0 = 0; r0 < n; r0 += 16) {
      const int64_t rows = std::min<int64_t>(16, n - r0);
      bool wanted = every_position;
      for (int64_t s = 0; s < sel.numel(); ++s) wanted |= sel.i[s] >= r0 && sel.i[s] < r0 + rows;
      if (!wanted) continue;
      model.text().logits(r.hidden.data() + r0 * hid, rows, logits.data(), golden::pool());
      for (int64_t i = 0; i < rows; ++i) {
        const float* row = logits.data() + i * vocab;
        if (every_position) {
          ASSERT_EQ(golden::argmax(row, vocab), top.i[(r0 + i) * 8]) << "top-1 at prompt position " << r0 + i;
        }
        for (int64_t s = 0; s < sel.numel(); ++s) {
          if (sel.i[s] != r0 + i) continue;
          std::vector<float> want(f["logits_sel"].f.begin() + s * vocab, f["logits_sel"].f.begin() + (s + 1) * vocab);
          EXPECT_TRUE(golden::close("logits_sel at " + std::to_string(r0 + i), row, want, l_atol, 0));
        }
      }
    }

    const golden::Tensor& gen = f["generated_ids"];
    const golden::Tensor& gen_vals = f["gen_top_vals"];
    for (int s = 0; s < 16; ++s) {
      ASSERT_EQ(r.generated[s], gen.i[s]) << "greedy token " << s;
      EXPECT_NEAR(r.gen_top1[s], gen_vals.f[s * 8], l_atol) << "top-1 logit of step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, TextGolden, ::testing::Values(WeightFormat::F32, WeightFormat::BF16),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

}  // namespace
}  // namespace qvl
