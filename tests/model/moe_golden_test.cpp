// The mixture-of-experts decoder (qwen3_vl_moe) against its reference
// (tests/fixtures/golden-moe): the sharded checkpoint as published, every
// prompt case through vision, chunked prefill and KV-cached greedy decode.
// f32 and bf16: hidden states, logits and the 16 greedy tokens exactly, and
// every router decision (prompt and decode steps) as the reference made it.
// q8 and q4: the logit error table, greedy tokens wherever the reference
// margin allows, and the router decisions that moved, per layer (diagnostic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "golden.h"
#include "prompt_runner.h"
#include "tiny_model.h"

namespace qvl {
namespace {

const char* kDir = "golden-moe";

// Router decisions of one layer, ours against the reference's, over `rows`
// rows: chosen ids as sets; weights (matched by id) and logits within the
// manifest's tolerances. Returns the rows whose chosen set differs.
struct RouterDiff {
  int64_t rows = 0, sets_differ = 0;
  double weight_err = 0, logit_err = 0;
};

RouterDiff compare_router(const RouterTrace& got, const golden::File& f, const std::string& prefix, int64_t row0,
                          int64_t rows) {
  const golden::Tensor& ids = f[prefix + ".topk_ids"];
  const golden::Tensor& w = f[prefix + ".topk_weights"];
  const golden::Tensor& logits = f[prefix + ".logits"];
  const int64_t k = ids.shape[1], experts = logits.shape[1];
  RouterDiff d;
  d.rows = rows;
  for (int64_t r = 0; r < rows; ++r) {
    std::set<int64_t> want(ids.i.begin() + r * k, ids.i.begin() + (r + 1) * k);
    std::set<int64_t> have(got.ids.begin() + (row0 + r) * k, got.ids.begin() + (row0 + r + 1) * k);
    if (want != have) {
      ++d.sets_differ;
      continue;
    }
    for (int64_t j = 0; j < k; ++j)
      for (int64_t g = 0; g < k; ++g)
        if (got.ids[(row0 + r) * k + g] == ids.i[r * k + j])
          d.weight_err = std::max(d.weight_err, std::fabs(double(got.weights[(row0 + r) * k + g]) - w.f[r * k + j]));
    for (int64_t e = 0; e < experts; ++e)
      d.logit_err =
          std::max(d.logit_err, std::fabs(double(got.logits[(row0 + r) * experts + e]) - logits.f[r * experts + e]));
  }
  return d;
}

class MoeGolden : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(MoeGolden, EveryPromptCase) {
  Model& model = golden::tiny_moe(GetParam());
  const nlohmann::json& m = golden::moe_manifest();
  const auto& tols = m["tolerances"];
  const double h_atol = tols["hidden.*"]["atol"], h_rtol = tols["hidden.*"]["rtol"];
  const double l_atol = tols["logits"]["atol"];
  const double w_atol = tols["router.*.topk_weights"]["atol"], rl_atol = tols["router.*.logits"]["atol"];
  const int layers = model.config().text.num_hidden_layers;
  const int64_t vocab = model.config().text.vocab_size;
  for (const auto& p : m["prompts"]) {
    const std::string name = p["name"];
    SCOPED_TRACE(name);
    const golden::File& f = golden::file(p["file"], kDir);
    TextTrace gen_trace;
    golden::PromptRun r = golden::run_prompt(model, p, 16, true, false, KvType::F32, kDir, &gen_trace);
    const int64_t n = static_cast<int64_t>(r.ids.size());
    ASSERT_EQ(r.ids, golden::ids_of(f["input_ids"]));

    // Router decisions first: a wrong expert names the layer and the row.
    double router_w = 0, router_l = 0;
    for (int l = 0; l < layers; ++l) {
      const std::string pl = "router.layer" + std::to_string(l), gl = "router.gen.layer" + std::to_string(l);
      const RouterDiff prompt = compare_router(r.trace.router[l], f, pl, 0, n);
      const RouterDiff gen = compare_router(gen_trace.router[l], f, gl, 0, 15);
      EXPECT_EQ(prompt.sets_differ, 0) << pl << ": chosen experts differ on " << prompt.sets_differ << " rows";
      EXPECT_EQ(gen.sets_differ, 0) << gl << ": chosen experts differ on " << gen.sets_differ << " steps";
      EXPECT_LE(std::max(prompt.weight_err, gen.weight_err), w_atol) << pl << " weights";
      EXPECT_LE(std::max(prompt.logit_err, gen.logit_err), rl_atol) << pl << " logits";
      router_w = std::max({router_w, prompt.weight_err, gen.weight_err});
      router_l = std::max({router_l, prompt.logit_err, gen.logit_err});
    }
    std::printf("%s %-14s max|dlogit_last| %.4f, router max|dweight| %.2e, max|dlogit| %.2e\n",
                weight_format_name(GetParam()), name.c_str(),
                golden::max_abs_diff(r.logits_last.data(), f["logits_last"].f.data(), vocab), router_w, router_l);

    if (p["has_hidden_states"]) {
      golden::expect_hidden_states(r, f, model.config().text.num_hidden_layers, h_atol, h_rtol);
    }
    EXPECT_TRUE(golden::close("logits_last", r.logits_last.data(), f["logits_last"].f, l_atol, 0));
    golden::expect_selected_logits(model, r, f, l_atol);
    golden::expect_greedy_tokens(r, f, l_atol);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, MoeGolden, ::testing::Values(WeightFormat::F32, WeightFormat::BF16),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

// Quantized experts (the router stays exact): logits_last's error against
// the reference, greedy tokens required equal wherever the reference margin
// exceeds twice that error, and per layer how many prompt-row router
// decisions moved (diagnostic: quantization shifts the hidden states, and a
// moved decision is a different expert's output, not an error).
struct QuantBound {
  WeightFormat format;
  double end_to_end;  // relative rms error of logits_last (a sanity bound)
};

class MoeQuantGolden : public ::testing::TestWithParam<QuantBound> {};

TEST_P(MoeQuantGolden, EndToEndLogitErrorAndRouterTable) {
  const QuantBound b = GetParam();
  Model& model = golden::tiny_moe(b.format);
  const int layers = model.config().text.num_hidden_layers;
  const int64_t vocab = model.config().text.vocab_size;
  std::printf("| fmt  | case           | max|dlogit| | rel rms err | greedy equal | router rows moved per layer |\n");
  for (const auto& p : golden::moe_manifest()["prompts"]) {
    const std::string name = p["name"];
    SCOPED_TRACE(name);
    const golden::File& f = golden::file(p["file"], kDir);
    golden::PromptRun r = golden::run_prompt(model, p, 16, true, false, KvType::F32, kDir);
    const std::vector<float>& want = f["logits_last"].f;
    double max_abs = 0;
    for (int64_t k = 0; k < vocab; ++k) max_abs = std::max(max_abs, std::fabs(double(r.logits_last[k]) - want[k]));
    const double rel = golden::rel_rms(r.logits_last.data(), want);
    EXPECT_LT(rel, b.end_to_end);
    const golden::Tensor& gen = f["generated_ids"];
    const golden::Tensor& margin = f["gen_margin"];
    int equal = 0;
    for (int s = 0; s < 16; ++s) {
      if (r.generated[s] != gen.i[s]) {
        EXPECT_LE(margin.f[s], 2 * max_abs)
            << "step " << s << " differs although the reference margin is " << margin.f[s];
        break;  // the continuations diverge from here
      }
      ++equal;
    }
    std::string moved;
    const int64_t n = static_cast<int64_t>(r.ids.size());
    for (int l = 0; l < layers; ++l) {
      const RouterDiff d = compare_router(r.trace.router[l], f, "router.layer" + std::to_string(l), 0, n);
      moved += std::to_string(d.sets_differ) + "/" + std::to_string(n) + " ";
    }
    std::printf("| %-4s | %-14s | %11.3f | %11.4f | %6d/16    | %s|\n", weight_format_name(b.format), name.c_str(),
                max_abs, rel, equal, moved.c_str());
  }
}

// q8's two_turn is the chaotic case (the router amplifies an activation code
// that moved by a last bit): measured 0.53 (Debian 12) and 0.60 (Debian 13) on
// the AVX-512 path, 0.66 and 0.65 under QVL_SIMD_TARGET=AVX2, 0.60 and 0.61 on
// the portable baseline, so its bound is 0.75, as MoePerExpert's; unrelated
// logits of the same spread are ~1.4 apart.
INSTANTIATE_TEST_SUITE_P(Formats, MoeQuantGolden,
                         ::testing::Values(QuantBound{WeightFormat::Q8, 0.75}, QuantBound{WeightFormat::Q4, 1.5}),
                         [](const auto& info) { return std::string(weight_format_name(info.param.format)); });

}  // namespace
}  // namespace qvl
