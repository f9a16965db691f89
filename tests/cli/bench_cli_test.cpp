// `qvl bench` through the binary on the tiny fixture: one JSON object naming
// the kernel of each phase and the unit it ran on, the peak of every unit
// this CPU has, and the decode figure as a fraction of the read bandwidth
// measured beside it (issue 15 item 5). Speeds themselves are not asserted:
// they belong to benchmarks, not tests.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "run_qvl.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

using json = nlohmann::json;
using test::run_qvl;

const std::string kTiny = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";

json bench(const std::string& weights) {
  const test::QvlResult r = run_qvl(
      {"bench", "--model", kTiny, "--weights", weights, "--threads", "1", "--decode-tokens", "6", "--skip-vision"});
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}

TEST(BenchCli, NamesKernelsUnitsAndPeaks) {
  const json q8 = bench("q8");
  const CpuFeatures& cpu = cpu_features();
  EXPECT_EQ(q8["weights"], "q8");
  EXPECT_NE(q8["kernels"]["decode"].get<std::string>().find("gemv int8"), std::string::npos) << q8["kernels"];
  EXPECT_NE(q8["kernels"]["prefill"].get<std::string>().find("gemm int8"), std::string::npos) << q8["kernels"];
  const AmxStatus amx = matmul_amx_status();
  const bool amx_int8 = std::string(amx.int8) == "used";
  EXPECT_EQ(q8["prefill_unit_256"], amx_int8 ? "amx_int8" : cpu.avx512_vnni ? "int8_dot" : "int16_madd");
  EXPECT_EQ(q8.contains("prefill_unit_fraction_256"), amx_int8 || cpu.avx512_vnni);
  EXPECT_GT(q8["prefill_fma_fraction_256"].get<double>(), 0);
  // Against the unit's peak probed right after the phase, not the probe at
  // the end of the run.
  if (q8.contains("prefill_unit_fraction_256")) {
    EXPECT_DOUBLE_EQ(q8["prefill_unit_fraction_256"].get<double>(),
                     q8["prefill_gflop_s_256"].get<double>() / q8["prefill_unit_peak_256"].get<double>());
  }

  EXPECT_EQ(q8["amx"]["int8"], amx.int8);
  EXPECT_EQ(q8["amx"]["bf16"], amx.bf16);
  if (!cpu.amx_int8) {
    EXPECT_EQ(q8["amx"]["int8"], "no AMX-INT8 on this CPU");
  }

  const json& peaks = q8["unit_peaks"];
  EXPECT_GT(peaks["fma_f32_gflop_s"].get<double>(), 0);
  EXPECT_EQ(peaks["int8_dot_gop_s"].get<double>() > 0, cpu.avx512_vnni || cpu.avx_vnni);
  EXPECT_EQ(peaks["bf16_dot_gflop_s"].get<double>() > 0, cpu.avx512_bf16);
  EXPECT_EQ(peaks["amx_bf16_gflop_s"].get<double>() > 0, cpu.amx_bf16 && amx_tile_state_granted());
  EXPECT_EQ(peaks["amx_int8_gop_s"].get<double>() > 0, cpu.amx_int8 && amx_tile_state_granted());

  EXPECT_GT(q8["read_bandwidth_gb_s"].get<double>(), 0);
  const double fraction = q8["decode_bandwidth_fraction"].get<double>();
  EXPECT_GT(fraction, 0);
  EXPECT_DOUBLE_EQ(fraction, q8["decode_gb_s"].get<double>() / q8["read_bandwidth_gb_s"].get<double>());
  // Each step reads the weights and the K/V rows of every position so far:
  // after the 256-token prompt, 257 to 261 positions in the 5 one-step rounds
  // (q8 keeps K/V in f16).
  const json text = json::parse(read_file(kTiny + "/config.json"))["text_config"];
  const double per_position = 2.0 * text["num_hidden_layers"].get<double>() *
                              text["num_key_value_heads"].get<double>() * text["head_dim"].get<double>() * 2;
  const double kv = q8["decode_kv_bytes_per_token"].get<double>();
  EXPECT_GE(kv, 257 * per_position);
  EXPECT_LE(kv, 261 * per_position);
  EXPECT_NEAR(q8["decode_gb_s"].get<double>(),
              (q8["decode_weight_bytes_per_token"].get<double>() + kv) * q8["decode_tok_s"].get<double>() / 1e9,
              1e-9 * q8["decode_gb_s"].get<double>());
  // Streams decoding together, as `serve --parallel N` runs them: each
  // width's aggregate speed and its ratio to one stream.
  for (int b : {2, 4, 8}) {
    const std::string n = std::to_string(b);
    ASSERT_TRUE(q8.contains("decode_tok_s_" + n + "_streams")) << b;
    EXPECT_GT(q8["decode_tok_s_" + n + "_streams"].get<double>(), 0);
    EXPECT_DOUBLE_EQ(q8["decode_streams_" + n + "_vs_1"].get<double>(),
                     q8["decode_tok_s_" + n + "_streams"].get<double>() / q8["decode_tok_s_1_stream"].get<double>());
  }
  // The same widths through the engine as serve runs them: 16 steps each
  // (max(16, --decode-tokens / 2)), every part of a step's split measured,
  // "other" what the parts leave of it.
  for (const char* name : {"engine_decode_1_stream", "engine_decode_8_streams"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(q8.contains(name));
    const json& e = q8[name];
    EXPECT_EQ(e["steps"], 16);
    EXPECT_GT(e["tok_s"].get<double>(), 0);
    for (const char* part : {"weights_matmul_ms", "weights_lm_head_ms", "attention_ms", "sampling_grammar_ms"})
      EXPECT_GT(e[part].get<double>(), 0) << part;
    EXPECT_NEAR(e["other_ms"].get<double>(),
                e["step_ms"].get<double>() - e["weights_matmul_ms"].get<double>() -
                    e["weights_lm_head_ms"].get<double>() - e["attention_ms"].get<double>() -
                    e["sampling_grammar_ms"].get<double>(),
                1e-9 * e["step_ms"].get<double>());
  }
  EXPECT_DOUBLE_EQ(q8["engine_decode_streams_8_vs_1"].get<double>(),
                   q8["engine_decode_8_streams"]["tok_s"].get<double>() /
                       q8["engine_decode_1_stream"]["tok_s"].get<double>());
  // The figures are the median round's: within the rounds' range.
  const json& range = q8["decode_bandwidth_fraction_range"];
  ASSERT_EQ(range.size(), 2u);
  EXPECT_LE(range[0].get<double>(), fraction);
  EXPECT_GE(range[1].get<double>(), fraction);
  // Where the decode weights sit: this process's mappings holding them, read
  // back from smaps (q8: converted, so never the checkpoint's).
  const double pages = q8["decode_weights_2mb_page_fraction"].get<double>();
  EXPECT_GE(pages, 0.0);
  EXPECT_LE(pages, 1.0);
  if (std::ifstream("/proc/self/smaps")) {
    EXPECT_GE(q8["decode_weights_mappings"].get<int>(), 1);
    EXPECT_GE(q8["decode_weights_resident_bytes"].get<double>(), q8["decode_weight_bytes_per_token"].get<double>());
  }

  const json bf16 = bench("bf16");
  EXPECT_EQ(bf16["prefill_unit_256"], std::string(amx.bf16) == "used" ? "amx_bf16" : "fma_f32");
  EXPECT_NE(bf16["kernels"]["decode"].get<std::string>().find("gemv f32 FMA, bf16 weights widened"), std::string::npos);
}

// The document page (issue 32): 896x1152 pixels are 28x36 merged patches of
// 32 pixels, 1008 image tokens; the answer decodes its 200 tokens (EOS
// ignored), and every phase's figure is there, the vision one also as a
// fraction of its unit.
TEST(BenchCli, ReportsTheDocumentPage) {
  const test::QvlResult r =
      run_qvl({"bench", "--model", kTiny, "--weights", "q8", "--threads", "1", "--decode-tokens", "6"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["page_image_tokens"], 1008);
  EXPECT_GT(j["page_prompt_tokens"].get<int>(), 1008);
  EXPECT_EQ(j["page_answer_tokens"], 200);
  for (const char* f : {"page_vision_ms", "page_prefill_ms", "page_prefill_tok_s", "page_first_token_ms",
                        "vision_gflop_s_page", "vision_fma_fraction_page"})
    EXPECT_GT(j[f].get<double>(), 0) << f;
  EXPECT_GE(j["page_first_token_ms"].get<double>(),
            j["page_vision_ms"].get<double>() + j["page_prefill_ms"].get<double>() - 1e-6);
  EXPECT_GE(j["page_answer_s"].get<double>() * 1e3, j["page_first_token_ms"].get<double>());
  EXPECT_EQ(j["vision_unit_page"], j["vision_unit_448x448"]);
  // A stream decoded while the page went in beside it, in pieces between its
  // tokens: some of its gaps fell while the page was encoded.
  EXPECT_GT(j["page_beside_stream_tokens_meanwhile"].get<int>(), 0);
  EXPECT_GT(j["page_beside_stream_longest_token_gap_ms"].get<double>(), 0);
  EXPECT_GT(j["page_beside_stream_first_token_ms"].get<double>(), 0);

  const test::QvlResult skipped = run_qvl(
      {"bench", "--model", kTiny, "--weights", "q8", "--threads", "1", "--decode-tokens", "6", "--skip-page", "--skip-video"});
  ASSERT_EQ(skipped.code, 0) << skipped.err;
  const json s = json::parse(skipped.out);
  EXPECT_FALSE(s.contains("page_first_token_ms"));
  EXPECT_FALSE(s.contains("page_beside_stream_longest_token_gap_ms"));
  EXPECT_FALSE(s.contains("video_first_token_ms"));
  EXPECT_TRUE(s.contains("vision_ms_448x448"));
}

// The video figure (issue 34): a 10-s 640x360 30-fps clip made in memory and
// asked about as a request is. fps-2 sampling keeps int(300 / 30 * 2) = 20
// frames, 10 temporal groups of 352x640 = 11x20 = 220 tokens, each after an
// 8-token timestamp (under 10 s) and its delimiters: 2280 tokens, within the
// default --max-video-tokens 4096, so the clip keeps its own size.
TEST(BenchCli, ReportsTheVideo) {
  const test::QvlResult r = run_qvl(
      {"bench", "--model", kTiny, "--weights", "q8", "--threads", "1", "--decode-tokens", "6", "--skip-page"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("x264"), std::string::npos) << "the encoder's banner leaked: " << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["video_frames_in_clip"], 300);
  EXPECT_EQ(j["video_frames_kept"], 20);
  EXPECT_EQ(j["video_kept_frames_bytes"], 20 * 640 * 360 * 3);
  EXPECT_EQ(j["video_tokens"], 10 * 220 + 10 * 8);
  EXPECT_EQ(j["video_max_tokens"], 4096);
  EXPECT_GT(j["video_prompt_tokens"].get<int>(), 2280);
  EXPECT_NE(j["video_clip"].get<std::string>().find("640x360 30 fps libx264 in mp4"), std::string::npos) << j["video_clip"];
  for (const char* f : {"video_decode_ms", "video_preprocess_ms", "video_vision_ms", "video_prefill_ms",
                        "video_first_token_ms", "video_decode_to_first_token_ms"})
    EXPECT_GT(j[f].get<double>(), 0) << f;
  EXPECT_GE(j["video_first_token_ms"].get<double>(),
            j["video_vision_ms"].get<double>() + j["video_prefill_ms"].get<double>() - 1e-6);
  EXPECT_GE(j["video_decode_to_first_token_ms"].get<double>(),
            j["video_decode_ms"].get<double>() + j["video_first_token_ms"].get<double>() - 1e-6);
  // The kept frames alone are 13.8 MB; the mark is this figure's peak.
  EXPECT_GE(j["video_peak_rss_bytes"].get<double>(), j["video_kept_frames_bytes"].get<double>());
  // Only what the sampled frames need is decoded (docs/video.md): the clip
  // has an IDR every 12 frames and no B-frames, so each of frames 0, 16,
  // 31, ... 299 is decoded from the IDR before it, s % 12 + 1 frames, 130 in
  // all; the demuxer seeks over the gaps that hold a whole group (before
  // frames 63, 110, 157, 205 and 252) and reads through the others.
  EXPECT_EQ(j["video_decode_packets_sent"], 130);
  EXPECT_EQ(j["video_decode_frames_decoded"], 130);
  EXPECT_EQ(j["video_decode_seeks"], 5);
  EXPECT_GE(j["video_decode_threads"].get<int>(), 1);
  EXPECT_GT(j["video_decode_every_frame_one_thread_ms"].get<double>(), 0);
}

}  // namespace
}  // namespace qvl
