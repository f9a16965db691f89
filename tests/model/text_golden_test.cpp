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
      golden::expect_hidden_states(r, f, model.config().text.num_hidden_layers, h_atol, h_rtol);
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

    golden::expect_greedy_tokens(r, f, l_atol);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, TextGolden, ::testing::Values(WeightFormat::F32, WeightFormat::BF16),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

}  // namespace
}  // namespace qvl
