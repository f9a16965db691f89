// qvl bench: load, vision, prefill and decode speed of a model, printed as one
// JSON object, with the machine's measured read bandwidth from
// the same run so the decode figure can be read as a fraction of the limit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"
#include "engine/engine_internals.h"
#include "engine/scheduler.h"
#include "image/preprocess.h"
#include "model/model.h"
#include "ops/machine_limits.h"
#include "ops/matmul.h"
#include "ops/ops.h"
#include "ops/thread_pool.h"
#include "util/args.h"
#include "util/error.h"
#include "util/huge_pages.h"
#include "video/encode.h"
#include "video/video.h"

namespace qvl::cli {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// VmRSS / VmHWM of this process in bytes.
int64_t proc_status_bytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  return -1;
}

// The matrices one decode step streams: every text layer's and the output
// head (the embedding table when tied).
std::vector<MemoryRange> decode_matrices(const TextWeights& w) {
  std::vector<MemoryRange> out;
  for (const TextLayerWeights& l : w.layers)
    for (const WeightMatrix* x : l.matrices()) out.push_back({x->data(), x->bytes()});
  out.push_back({w.lm_head.data(), w.lm_head.bytes()});
  return out;
}

// A deterministic test picture: smooth gradients plus noise, so nothing in
// the pipeline can shortcut it.
std::shared_ptr<Image> synthetic_image(int width, int height) {
  auto img = std::make_shared<Image>();
  img->width = width;
  img->height = height;
  img->rgb.resize(size_t(width) * height * 3);
  std::mt19937 rng(width * 31 + height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)
        img->rgb[(size_t(y) * width + x) * 3 + c] =
            static_cast<uint8_t>((x * (c + 1) + y * (3 - c)) / 4 % 200 + rng() % 56);
  return img;
}

// Text-only prefill of n random tokens into a fresh cache; returns seconds.
double prefill(Model& model, ThreadPool& pool, KvCache& cache, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(n);
  std::vector<Pos3> pos(n);
  for (int64_t i = 0; i < n; ++i) {
    ids[i] = static_cast<int32_t>(rng() % 100000);  // ordinary (non-special) tokens
    pos[i] = {i, i, i};
  }
  cache.set_size(0);
  const Clock::time_point t = Clock::now();
  model.text().forward({ids.data(), pos.data(), n}, cache, pool);
  return seconds_since(t);
}

// Aggregate decode speed of 1, 2, 4 and 8 streams decoding together, the way
// the server's scheduler runs concurrent requests (TextDecoder::forward_batch:
// one pass over the weights per step for all), each stream after its own
// 64-token prompt, greedy; and the ratio to one stream (issue 9 asks >= 1.7x
// with 2 streams, >= 2.8x with 4; 8 is `serve --parallel 8`, where x no
// longer fits L1 beside the weights: simd_matmul.cpp). The widths are
// measured in turn, three times over, `steps` / 3 steps each time, and the
// best time of each kept, so a load that changes during the run does not
// favour one of them.
void concurrent_decode_figures(Model& model, ThreadPool& pool, KvType kv, int64_t steps, nlohmann::ordered_json& j) {
  constexpr int kStreams = 8, kRounds = 3;
  constexpr int64_t kPrompt = 64;
  constexpr int kWidths[] = {1, 2, 4, 8};
  constexpr int kNumWidths = std::size(kWidths);
  const int64_t per_round = std::max<int64_t>(1, steps / kRounds);
  TextDecoder& text = model.text();
  const int64_t hid = model.config().text.hidden_size, vocab = model.config().text.vocab_size;
  std::vector<KvCache> caches;
  for (int s = 0; s < kStreams; ++s) {
    caches.push_back(text.make_cache(kPrompt + kNumWidths * kRounds * per_round + 1, kv));  // stream 0 runs in all
    prefill(model, pool, caches.back(), kPrompt, 10 + s);
  }
  std::vector<float> hidden(kStreams * hid), logits(kStreams * vocab);
  std::vector<int32_t> next(kStreams);  // each stream's next token
  for (int s = 0; s < kStreams; ++s) next[s] = 1000 + s;
  double best[kNumWidths] = {};  // tokens/s per width
  for (int round = 0; round < kRounds; ++round) {
    for (int w = 0; w < kNumWidths; ++w) {
      const int b = kWidths[w];
      std::vector<KvCache*> cs(caches.size());
      for (int s = 0; s < kStreams; ++s) cs[s] = &caches[s];
      std::vector<Pos3> pos(b);
      const Clock::time_point t = Clock::now();
      for (int64_t step = 0; step < per_round; ++step) {
        for (int s = 0; s < b; ++s) pos[s] = generated_position(caches[s].size(), 0);
        text.forward_batch({next.data(), size_t(b)}, pos, {cs.data(), size_t(b)}, pool, hidden.data());
        text.logits(hidden.data(), b, logits.data(), pool);
        for (int s = 0; s < b; ++s) {
          const float* row = logits.data() + s * vocab;
          next[s] = static_cast<int32_t>(argmax(row, vocab));
        }
      }
      best[w] = std::max(best[w], b * per_round / seconds_since(t));
    }
  }
  for (int w = 0; w < kNumWidths; ++w) {
    const int b = kWidths[w];
    j[cat("decode_tok_s_", b, b == 1 ? "_stream" : "_streams")] = best[w];
    if (b > 1) j[cat("decode_streams_", b, "_vs_1")] = best[w] / best[0];
  }
}

// Sequences the bench's engine holds at once: the engine figures of 8
// streams decoding together, as `serve` runs them by default on 2 cores.
constexpr int kBenchSlots = 8;

// The same streams through the engine as the server runs them (Engine::step
// over the runs: each stream sampled at Qwen's recommended settings with its
// own seed, stop strings, detokenizing, callbacks), 1 and 8 of them, each
// after its own short prompt, and where their steps' time goes
// (DecodeProfile, per step): the weights read (layer matmuls, lm_head),
// attention over each stream's KV, choosing each stream's token, the rest.
// What grows with the streams is what keeps the ratio under 8.
void engine_decode_figures(Engine& engine, int64_t steps, nlohmann::ordered_json& j) {
  double tok_s[2] = {};
  for (const int streams : {1, kBenchSlots}) {
    engine.reset();
    std::vector<GenerateRequest> reqs;
    for (int s = 0; s < streams; ++s) {
      GenerateRequest& r = reqs.emplace_back(greedy_request(
          {{"user", {{cat("Write a long story about lighthouse number ", s + 1, "."), nullptr}}}}, steps + 1));
      r.sampling.temperature = 0.7;
      r.sampling.top_p = 0.8;
      r.sampling.top_k = 20;
      r.sampling.seed = 100 + s;
    }
    const GenerateCallbacks callbacks;
    std::vector<Engine::RunPtr> runs;
    std::vector<Engine::Run*> live;
    for (int s = 0; s < streams; ++s) {
      runs.push_back(engine.begin(reqs[s], callbacks, s));
      // Prefilled alone, so every stream decodes from the first measured step.
      while (engine.run_stage(*runs.back()) != Engine::RunStage::Decode) engine.step(*runs.back());
      live.push_back(runs.back().get());
    }
    DecodeProfile profile;
    EngineInternals::set_decode_profile(engine, &profile);
    const Clock::time_point t = Clock::now();
    while (!live.empty()) {
      const std::vector<Engine::StepResult> results = engine.step(live);
      for (size_t i = results.size(); i-- > 0;) {
        if (results[i].error) std::rethrow_exception(results[i].error);
        if (!results[i].more) live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    const double seconds = seconds_since(t);
    EngineInternals::set_decode_profile(engine, nullptr);
    for (Engine::RunPtr& run : runs) engine.end(*run);
    const double per_step = profile.steps > 0 ? 1.0 / static_cast<double>(profile.steps) : 0;
    tok_s[streams > 1] = static_cast<double>(profile.rows) / seconds;
    const std::string name = cat("engine_decode_", streams, streams == 1 ? "_stream" : "_streams");
    j[name] = {{"tok_s", tok_s[streams > 1]},
               {"steps", profile.steps},
               {"step_ms", profile.step_ms * per_step},
               {"weights_matmul_ms", profile.matmul_ms * per_step},
               {"weights_lm_head_ms", profile.logits_ms * per_step},
               {"attention_ms", profile.attention_ms * per_step},
               {"sampling_grammar_ms", profile.sampling_ms * per_step},
               {"other_ms", profile.other_ms() * per_step}};
  }
  if (tok_s[0] > 0) j[cat("engine_decode_streams_", kBenchSlots, "_vs_1")] = tok_s[1] / tok_s[0];
  engine.reset();
}

// A stream's longest wait between two tokens while a document page
// (896x1152, 1008 image tokens) is encoded and prefilled beside it, through
// the scheduler as the server runs them (the page's vision and prefill cut
// into pieces between the stream's decode steps): Task::
// longest_gap_while_encoding_ms. Beside it the page's own first token, to
// set against the lone page's (page_first_token_ms).
void interleave_figures(Engine& engine, nlohmann::ordered_json& j) {
  engine.reset();
  SchedulerOptions options;
  options.parallel = 2;
  options.timeout_s = 0;
  Scheduler scheduler(engine, options);
  auto stream = std::make_shared<Task>(greedy_request(
      {{"user", {{"Tell me a long story about a lighthouse.", nullptr}}}}, engine.slot_ctx() - 64));
  scheduler.submit(stream);
  while (stream->pieces() < 4 && !stream->done()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto page = std::make_shared<Task>(greedy_request(
      {{"user", {{"", synthetic_image(896, 1152)}, {"Read all the text on this page.", nullptr}}}}, 1));
  const int64_t before = stream->pieces();
  scheduler.submit(page);
  page->wait_done(std::chrono::hours(1));
  const int64_t beside = stream->pieces() - before;
  stream->cancel();
  stream->wait_done(std::chrono::minutes(1));
  if (page->outcome() != TaskOutcome::Succeeded) fail("bench: the page beside a stream failed: ", page->error());
  j["page_beside_stream_first_token_ms"] = page->result().timings.first_token_ms;
  j["page_beside_stream_tokens_meanwhile"] = beside;
  j["page_beside_stream_longest_token_gap_ms"] = stream->longest_gap_while_encoding_ms();
  engine.reset();
}

// Multiply-adds ×2 of a prefill of n tokens after `past` cached ones: the
// layers' projections and MLP (lm_head runs for the last token only) plus
// causal attention (QKᵀ and PV over the positions each token sees).
double text_prefill_flops(const TextConfig& c, int64_t n, int64_t past) {
  const double q = double(c.num_attention_heads) * c.head_dim;
  const double seen = double(n) * past + double(n) * (n + 1) / 2;  // key positions summed over the n queries
  return text_matmul_flops_per_token(c) * double(n) + c.num_hidden_layers * 2 * 2 * q * seen +
         2.0 * c.hidden_size * c.vocab_size;
}

// Time to first token of a second question about the same 448x448 image
// (issue 9: <= 1 s): in the same conversation (the first answer and a new
// question appended), in a new conversation repeating the image and the
// prefix before it, and in one with another system prompt, where only the
// image-embedding cache helps and the prompt is prefilled again.
void repeat_image_figures(Engine& engine, nlohmann::ordered_json& j) {
  engine.reset();
  const std::shared_ptr<Image> img = synthetic_image(448, 448);
  std::vector<Message> conversation = {{"user", {{"", img}, {"Describe this image.", nullptr}}}};
  const GenerateResult first = engine.generate(greedy_request(conversation, 16));
  conversation.push_back({"assistant", {{first.text, nullptr}}});
  conversation.push_back({"user", {{"What colors are in it?", nullptr}}});
  const GenerateResult followup = engine.generate(greedy_request(conversation, 1));
  j["followup_first_token_ms_448x448"] = followup.timings.first_token_ms;
  j["followup_cached_tokens_448x448"] = followup.cached_tokens;
  j["followup_prompt_tokens_448x448"] = followup.prompt_tokens;
  j["followup_prefill_ms_448x448"] = followup.timings.prefill_ms;  // the new tokens: most of the first-token time

  const GenerateResult repeat =
      engine.generate(greedy_request({{"user", {{"", img}, {"Is there any text in this picture?", nullptr}}}}, 1));
  j["repeat_image_first_token_ms_448x448"] = repeat.timings.first_token_ms;
  j["repeat_image_cached_tokens_448x448"] = repeat.cached_tokens;

  const GenerateResult other = engine.generate(greedy_request(
      {{"system", {{"You are a careful assistant.", nullptr}}}, {"user", {{"", img}, {"What is this?", nullptr}}}}, 1));
  j["repeat_image_other_prefix_first_token_ms_448x448"] = other.timings.first_token_ms;
  j["repeat_image_other_prefix_vision_ms_448x448"] = other.timings.vision_ms;
  j["repeat_image_other_prefix_image_cache_hits"] = other.timings.image_cache_hits;
  engine.reset();
}

// The users' showcase work: a document page at Qwen's recommended ~1024
// image tokens for OCR (896x1152 pixels = 28x36 merged patches = 1008
// tokens, `qvl serve`'s default image cap), asked to read it out, with a
// 200-token answer (greedy, EOS ignored so every run decodes the same
// length): vision, prefill of the whole prompt, first token, and the whole
// answer, all through generate() as a request runs.
void page_figures(Engine& engine, const Model& model, nlohmann::ordered_json& j) {
  constexpr int kWidth = 896, kHeight = 1152;
  constexpr int64_t kAnswer = 200;
  engine.reset();
  GenerateRequest req = greedy_request(
      {{"user", {{"", synthetic_image(kWidth, kHeight)}, {"Read all the text on this page.", nullptr}}}}, kAnswer);
  const GenerateResult r = engine.generate(req);
  const Timings& t = r.timings;
  const PixelValues pv = preprocess(*synthetic_image(kWidth, kHeight), model.folder().preprocessor);
  const ImageGrid g{pv.grid_t, pv.grid_h, pv.grid_w};
  j["page_image_tokens"] = g.tokens(model.config().vision.spatial_merge_size);
  j["page_prompt_tokens"] = r.prompt_tokens;
  j["page_vision_ms"] = t.vision_ms;
  j["vision_gflop_s_page"] = model.vision().flops({&g, 1}) / (t.vision_ms / 1e3) / 1e9;
  j["page_prefill_ms"] = t.prefill_ms;
  j["page_prefill_tok_s"] = t.prefill_tok_s();
  j["page_first_token_ms"] = t.first_token_ms;
  j["page_answer_tokens"] = r.completion_tokens;
  j["page_answer_s"] = (t.first_token_ms + t.decode_ms) / 1e3;
  engine.reset();
}

// The bench's clip: 10 s of 640x360 at 30 fps, H.264 in MP4 (what phones and
// browsers send), encoded in memory frame by frame: gradients that drift
// and a block that moves, so no frame repeats the one before, smooth enough
// to compress like camera footage (~1 MB, not the megabytes of noise).
constexpr int kClipWidth = 640, kClipHeight = 360, kClipFps = 30, kClipSeconds = 10;

std::vector<uint8_t> bench_clip(std::string& described) {
  const VideoEncoding e{"mp4", "libx264", kClipWidth, kClipHeight, kClipFps, int64_t{kClipFps} * kClipSeconds};
  if (!can_encode(e)) fail("this FFmpeg cannot encode the bench's clip (libx264 in mp4); use --skip-video");
  std::vector<uint8_t> bytes = encode_video(e, [&](int64_t k) {
    Image f;
    f.width = kClipWidth;
    f.height = kClipHeight;
    f.rgb.resize(size_t(kClipWidth) * kClipHeight * 3);
    const int shift = static_cast<int>(k * 3);
    for (int y = 0; y < kClipHeight; ++y)
      for (int x = 0; x < kClipWidth; ++x) {
        uint8_t* px = &f.rgb[(size_t(y) * kClipWidth + x) * 3];
        const bool block = (x + kClipWidth - shift % kClipWidth) % kClipWidth < 80 && y > 140 && y < 220;
        px[0] = block ? 240 : static_cast<uint8_t>((x + shift) / 3);
        px[1] = block ? 40 : static_cast<uint8_t>(y * 2 / 3 + shift / 5);
        px[2] = static_cast<uint8_t>((x + y) / 4);
      }
    return f;
  });
  described = cat(kClipSeconds, " s ", kClipWidth, "x", kClipHeight, " ", kClipFps, " fps ", e.encoder, " in ",
                  e.container, " (", bytes.size(), " bytes)");
  return bytes;
}

// A question about the clip through the real path: the clip decoded from
// memory with the frames the engine's video-token budget samples (only
// those kept, as a request's are), then generate() as a request runs it:
// vision over every temporal group, prefill, first token. Peak RSS is this
// figure's alone (the high-water mark is reset first).
void video_figures(Engine& engine, nlohmann::ordered_json& j) {
  engine.reset();
  std::string clip;
  const std::vector<uint8_t> bytes = bench_clip(clip);
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS (Linux 4.0+)
  FrameSampling sampling;
  sampling.budget = engine.info().video_budget;
  const Clock::time_point start = Clock::now();
  auto video = std::make_shared<const Video>(decode_video(bytes, sampling));
  const double decode_ms = seconds_since(start) * 1e3;
  std::vector<Message> question = {{"user", {{"", nullptr, video}, {"What happens in this video?", nullptr}}}};
  const int64_t without = static_cast<int64_t>(
      engine.prompt_tokens(greedy_request({{"user", {{"What happens in this video?", nullptr}}}}, 1)).size());
  const GenerateResult r = engine.generate(greedy_request(question, 1));
  const double to_first_token_ms = seconds_since(start) * 1e3;
  j["video_clip"] = clip;
  j["video_frames_in_clip"] = video->total_frames;
  j["video_frames_kept"] = video->frames.size();
  j["video_kept_frames_bytes"] = video->frames.size() * size_t(video->width) * video->height * 3;
  j["video_tokens"] = r.prompt_tokens - without;
  j["video_prompt_tokens"] = r.prompt_tokens;
  j["video_max_tokens"] = engine.info().video_budget.max_tokens;
  j["video_decode_ms"] = decode_ms;
  j["video_preprocess_ms"] = r.timings.preprocess_ms;
  j["video_vision_ms"] = r.timings.vision_ms;
  j["video_prefill_ms"] = r.timings.prefill_ms;
  j["video_first_token_ms"] = r.timings.first_token_ms;  // from generate(), as the engine's other first-token figures
  j["video_decode_to_first_token_ms"] = to_first_token_ms;  // the clip's bytes to the first token
  j["video_peak_rss_bytes"] = proc_status_bytes("VmHWM");
  // How the decode got its frames (docs/video.md), and the same clip decoded
  // as before: every frame in order on one thread (bench/video_decode times
  // long 1080p clips).
  j["video_decode_packets_sent"] = video->decoding.packets_sent;
  j["video_decode_frames_decoded"] = video->decoding.frames_decoded;
  j["video_decode_seeks"] = video->decoding.seeks;
  j["video_decode_threads"] = video->decoding.threads;
  const Clock::time_point every = Clock::now();
  decode_video(bytes, sampling, {}, {false, 1});
  j["video_decode_every_frame_one_thread_ms"] = seconds_since(every) * 1e3;
  engine.reset();
}

// Jump-forward's saving on a constrained answer (masks cached): the tokens
// its grammar forced, the forwards the answer took and its time from
// request to last token, with jump-forward off and on (the best of three
// each, alternating, so a burst of other load on the machine hits both).
void jump_forward_figures(Engine& engine, GenerateRequest req, nlohmann::ordered_json& j) {
  double best_ms[2] = {1e300, 1e300};
  GenerateResult last[2];
  for (int round = 0; round < 3; ++round)
    for (const bool on : {false, true}) {
      req.jump_forward = on;
      const Clock::time_point t = Clock::now();
      last[on] = engine.generate(req);
      best_ms[on] = std::min(best_ms[on], seconds_since(t) * 1e3);
    }
  j["constrained_json_forced_tokens"] = last[1].timings.forced_tokens;
  j["constrained_json_jump_forward_same_answer"] = last[0].token_ids == last[1].token_ids;
  for (const bool on : {false, true}) {
    const char* name = on ? "on" : "off";
    j[cat("constrained_json_jump_forward_", name, "_decode_steps")] = last[on].timings.decode_steps;
    j[cat("constrained_json_jump_forward_", name, "_answer_ms")] = best_ms[on];
  }
}

// Constrained decoding's cost: an invoice schema (the kind of extraction
// structured output is for) decoded greedily, its first request (every
// grammar state's mask built on the way) and a second one (masks cached),
// against the same decode unconstrained. The overhead is the constraint's
// time over the decode time of the same answer.
void constraint_figures(Engine& engine, nlohmann::ordered_json& j) {
  const char* schema = R"({"type":"object","properties":{
    "invoice_number":{"type":"string"},"date":{"type":"string","format":"date"},
    "vendor":{"type":"object","properties":{"name":{"type":"string"},"address":{"type":"string"}},"required":["name"],"additionalProperties":false},
    "line_items":{"type":"array","minItems":1,"items":{"type":"object","properties":{
      "description":{"type":"string"},"quantity":{"type":"integer"},"unit_price":{"type":"number"}},
      "required":["description","quantity","unit_price"],"additionalProperties":false}},
    "subtotal":{"type":"number"},"tax":{"type":"number"},"total":{"type":"number"},
    "currency":{"type":"string","enum":["USD","EUR","GBP"]},"paid":{"type":"boolean"},
    "notes":{"type":["string","null"]}},
    "required":["invoice_number","date","vendor","line_items","subtotal","tax","total","currency","paid","notes"],
    "additionalProperties":false})";
  GenerateRequest req = greedy_request({{"user", {{"Extract the invoice fields as JSON.", nullptr}}}}, 96);
  req.ignore_eos = false;
  const GenerateResult free = engine.generate(req);
  req.response_format = {ResponseFormat::Type::JsonSchema, schema};
  engine.validate(req);
  const GenerateResult cold = engine.generate(req);
  const GenerateResult warm = engine.generate(req);
  auto figures = [&](const char* name, const GenerateResult& r) {
    const Timings& t = r.timings;
    j[cat("constrained_", name, "_tokens")] = r.completion_tokens;
    j[cat("constrained_", name, "_decode_tok_s")] = t.decode_tok_s();
    j[cat("constrained_", name, "_constraint_ms")] = t.constraint_ms;
    j[cat("constrained_", name, "_overhead")] = t.decode_ms > 0 ? t.constraint_ms / t.decode_ms : 0;
  };
  j["unconstrained_decode_tok_s"] = free.timings.decode_tok_s();
  figures("cold", cold);
  figures("warm", warm);
  jump_forward_figures(engine, req, j);
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args args("bench", "--model M [--weights bf16|f32|q8|q4] [--precision exact|fast] [--threads N]",
            "Measures load time, memory, vision, prefill and decode speed and prints one JSON object.\n"
            "Figures: vision on synthetic 448x448 and 1024x768 images, a document page (896x1152 = 1008 image\n"
            "tokens: vision, prefill, first token, a 200-token answer), text prefill of 256 and 1024 tokens,\n"
            "decode over --decode-tokens tokens, aggregate decode of 1, 2, 4 and 8 streams decoding together\n"
            "(each width for about --decode-tokens steps), 1 and 8 streams through the engine with each step's time\n"
            "split (weights, attention, sampling, other), a stream's longest token gap while a page is encoded beside\n"
            "it, the machine's read bandwidth measured in the same run,\n"
            "and a 10-s 640x360 30-fps H.264 clip made in memory, asked about as a request is (decode, vision,\n"
            "first token, peak RSS, video tokens within --max-video-tokens).");
  ModelChoice choice;  // `model` is the loaded Model below
  EngineParams requested;
  // 4096 tokens a slot: enough for every figure (the clip's ~2.3k tokens);
  // unwritten KV is address space, not memory (kv_cache.h).
  requested.slots = kBenchSlots;
  requested.ctx_size = int64_t{4096} * kBenchSlots;
  int64_t decode_tokens = 128;
  bool skip_vision = false, skip_page = false, skip_video = false;
  visit_options(choice, args);
  visit_options(requested, args);
  args(decode_tokens, "decode-tokens", "N", "tokens decoded for decode_tok_s").range(1, 100000);
  args(skip_vision, "skip-vision", "leave out the vision figures (the page's and the video's too)");
  args(skip_page, "skip-page", "leave out the document page's figures (896x1152, a 200-token answer)");
  args(skip_video, "skip-video", "leave out the video's figures (a 10-s 640x360 clip)");
  bool constrained_only = false;
  args(constrained_only, "constrained-only",
       "only the load figures and the constrained-decoding ones (an invoice schema: mask cost, jump-forward off/on)");
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("bench: unexpected argument '", args.positional()[0], "' (see qvl bench --help)"));
  EngineParams params = engine_params(choice, requested);

  nlohmann::ordered_json j;
  const Clock::time_point start = Clock::now();
  std::unique_ptr<Engine> engine = Engine::create(params);
  Model& model = EngineInternals::model(*engine);
  ThreadPool& pool = EngineInternals::pool(*engine);
  j["weights"] = weight_format_name(engine->info().weights);
  j["precision"] = params.precision ? matmul_precision_name(*params.precision) : "default";
  j["fast_bf16_matmul"] = model.fast_matmul();  // whether --precision fast took effect (bf16 + AVX512-BF16 or AMX)
  j["kv_type"] = kv_type_name(params.resolved_kv_type());
  j["threads"] = engine->info().threads;
  j["simd_target"] = simd_target_name();
  // The kernel each phase's products run on: vision blocks and text
  // prefill as GEMMs (m = 256 stands for any m > 8), decode as m = 1.
  const ModelWeights& w = model.weights();
  const MatmulKernel vision_kernel = matmul_kernel(w.vision.blocks.at(0).fc1.w, 256);
  // The first layer's o_proj stands for them all (dense or sparse MLP alike).
  const WeightMatrix& text_matrix = w.text.layers.at(0).o.w;
  const MatmulKernel prefill_kernel = matmul_kernel(text_matrix, 256);
  j["kernels"] = {
      {"vision", vision_kernel.name}, {"prefill", prefill_kernel.name}, {"decode", matmul_kernel(text_matrix, 1).name}};
  // Vision attention as the encoder calls it (many queries, its head size
  // and the precision of its products).
  AttentionParams vision_attention;
  vision_attention.nq = 256;
  vision_attention.head_dim = model.config().vision.head_dim();
  vision_attention.precision = attention_precision(w.vision.blocks.at(0).qkv.w);
  j["kernels"]["vision_attention"] = attention_kernel_name(vision_attention);
  const AmxStatus amx = matmul_amx_status();
  j["amx"] = {{"int8", amx.int8}, {"bf16", amx.bf16}, {"attention", attention_amx_status()}};  // "used" or why not
  j["load_s"] = seconds_since(start);
  j["file_bytes"] = model.file_bytes();
  j["weight_bytes"] = model.weights().matrix_bytes;
  j["kv_cache_reserved_bytes"] = engine->info().kv_cache_bytes;
  j["rss_after_load_bytes"] = proc_status_bytes("VmRSS");
  if (constrained_only) {
    constraint_figures(*engine, j);
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  // The peak of a phase's unit, probed right after the phase: the machines
  // these runs share drift by 2x within a minute (one Zen 5 run measured its
  // int8 peak at 936 and the next at 1604 GOP/s), so a fraction against the
  // single probe at the end can be off by that much; a phase and the probe
  // beside it see the same neighbours. <phase>_unit_peak_<case>.
  auto peak_beside = [&](const char* phase, const char* which, MatmulUnit unit) {
    const double peak = measure_unit_peak(pool, unit, 0.2);
    if (peak > 0) j[cat(phase, "_unit_peak_", which)] = peak;
  };

  // Start to first token: a 448x448 image and a question, through generate().
  if (!skip_vision) {
    GenerateRequest req;
    req.messages = {{"user", {{"", synthetic_image(448, 448)}, {"Describe this image.", nullptr}}}};
    req.sampling.temperature = 0;
    req.max_tokens = 1;
    req.ignore_eos = true;
    GenerateResult r = engine->generate(req);
    j["vision_ms_448x448"] = r.timings.vision_ms;
    {
      const PixelValues pv448 = preprocess(*synthetic_image(448, 448), model.folder().preprocessor);
      const ImageGrid g{pv448.grid_t, pv448.grid_h, pv448.grid_w};
      j["vision_gflop_s_448x448"] = model.vision().flops({&g, 1}) / (r.timings.vision_ms / 1e3) / 1e9;
    }
    peak_beside("vision", "448x448", vision_kernel.unit);
    j["image_preprocess_ms_448x448"] = r.timings.preprocess_ms;
    j["start_to_first_token_s"] = seconds_since(start);
    j["first_token_ms_448x448"] = r.timings.first_token_ms;
    j["prompt_tokens_448x448"] = r.prompt_tokens;
    engine->reset();

    const PixelValues pv = preprocess(*synthetic_image(1024, 768), model.folder().preprocessor);
    const VisionInput in{pv.data.data(), {pv.grid_t, pv.grid_h, pv.grid_w}};
    const Clock::time_point t = Clock::now();
    model.vision().encode({&in, 1}, pool);
    const double s = seconds_since(t);
    j["vision_ms_1024x768"] = s * 1e3;
    j["vision_gflop_s_1024x768"] = model.vision().flops({&in.grid, 1}) / s / 1e9;
    peak_beside("vision", "1024x768", vision_kernel.unit);
  }

  if (!skip_vision) repeat_image_figures(*engine, j);
  if (!skip_vision && !skip_page) {
    page_figures(*engine, model, j);
    interleave_figures(*engine, j);
  }

  // Text prefill and decode on their own cache (the engine's is left alone).
  KvCache cache =
      model.text().make_cache(std::max<int64_t>(1024 + 1, 256 + decode_tokens + 1), params.resolved_kv_type());
  const double prefill_256_s = prefill(model, pool, cache, 256, 1);
  j["prefill_tok_s_256"] = 256 / prefill_256_s;
  j["prefill_gflop_s_256"] = text_prefill_flops(model.config().text, 256, 0) / prefill_256_s / 1e9;
  peak_beside("prefill", "256", prefill_kernel.unit);
  j["prefill_tok_s_1024"] = 1024 / prefill(model, pool, cache, 1024, 2);

  // Decode after a 256-token prompt, greedy, each step = forward + lm_head.
  // The limit it is a fraction of is the read bandwidth, measured right after
  // each decode round on a buffer allocated after the peak-RSS figure (decode
  // allocates nothing, so the footprint is complete here). On a shared
  // machine whose bandwidth drifts by 2x within seconds, a round and the probe
  // beside it see the same load; the figures are those of the round whose
  // ratio is the median. (The best round against the best probe, as before,
  // set a 10 ms burst of the probe against 0.3 s of decode.)
  prefill(model, pool, cache, 256, 3);
  j["peak_rss_bytes"] = proc_status_bytes("VmHWM");
  j["rss_after_bench_bytes"] = proc_status_bytes("VmRSS");
  const int64_t vocab = model.config().text.vocab_size;
  std::vector<float> logits(vocab);
  model.text().logits(model.text().last_hidden(), 1, logits.data(), pool);
  constexpr int kRounds = 5;
  const size_t bw_floats = size_t(512) << 20 >> 2;  // 512 MiB
  std::shared_ptr<float> bw_buf = bandwidth_buffer(pool, bw_floats);
  // What a step reads: the text weights (decode_bytes) and the K/V rows of
  // every position so far, the new one included (attention reads them all).
  // The K/V rows are counted: past a few hundred positions they no longer
  // fit the caches beside 1-4 GB of weights, and they grow with the context.
  const double weight_bytes = static_cast<double>(model.weights().decode_bytes);
  const double kv_bytes_per_position = static_cast<double>(cache.bytes_per_position());
  struct Round {
    double tok_s, bytes_per_token, bw_gb_s;
    double gb_s() const { return bytes_per_token * tok_s / 1e9; }
    double fraction() const { return gb_s() / bw_gb_s; }
  };
  std::vector<Round> rounds;
  for (int round = 0; round < kRounds; ++round) {
    const int64_t steps = std::max<int64_t>(1, decode_tokens / kRounds);
    double bytes = 0;
    const Clock::time_point t = Clock::now();
    for (int64_t s = 0; s < steps; ++s) {
      const int32_t tok = static_cast<int32_t>(argmax(logits.data(), vocab));
      const Pos3 pos = generated_position(cache.size(), 0);
      bytes += weight_bytes + kv_bytes_per_position * static_cast<double>(cache.size() + 1);
      model.text().forward({&tok, &pos, 1}, cache, pool);
      model.text().logits(model.text().last_hidden(), 1, logits.data(), pool);
    }
    const double seconds = seconds_since(t);
    const double bw = measure_read_bandwidth_gbs(pool, bw_buf.get(), bw_floats, 2);
    rounds.push_back({steps / seconds, bytes / steps, bw});
  }
  bw_buf.reset();
  std::sort(rounds.begin(), rounds.end(), [](const Round& a, const Round& b) { return a.fraction() < b.fraction(); });
  const Round& mid = rounds[rounds.size() / 2];
  j["decode_tok_s"] = mid.tok_s;
  j["decode_weight_bytes_per_token"] = model.weights().decode_bytes;
  j["decode_kv_bytes_per_token"] = mid.bytes_per_token - weight_bytes;  // mean over the round
  j["decode_gb_s"] = mid.gb_s();
  j["read_bandwidth_gb_s"] = mid.bw_gb_s;
  j["decode_bandwidth_fraction"] = mid.fraction();
  j["decode_bandwidth_fraction_range"] = {rounds.front().fraction(), rounds.back().fraction()};
  // Where those weights sit: bf16 is read in place from the page cache, whose
  // folios are 2 MB or 4 KB as the file was last read, and 4 KB pages stream
  // slower (util/huge_pages.h), so a low fraction above may be the pages'.
  // Whole mappings are counted: for in-place weights, the checkpoint's.
  const Residency pages = residency_of(own_mappings(), decode_matrices(model.weights().text));
  j["decode_weights_mappings"] = pages.mappings;
  j["decode_weights_resident_bytes"] = pages.resident_bytes;
  j["decode_weights_2mb_page_fraction"] =
      pages.resident_bytes > 0 ? static_cast<double>(pages.huge_bytes) / static_cast<double>(pages.resident_bytes)
                               : 0.0;
  // After the peak RSS figure: its three extra KV caches are not the
  // single-request footprint.
  concurrent_decode_figures(model, pool, params.resolved_kv_type(), std::max<int64_t>(8, decode_tokens / 4), j);
  engine_decode_figures(*engine, std::max<int64_t>(16, decode_tokens / 2), j);

  constraint_figures(*engine, j);

  // Every multiply unit's peak, and each compute-bound figure as a fraction
  // of the unit its kernel ran on (a figure without its limit says little
  // on a shared machine), then of the FP32 FMA peak as before.
  const UnitPeaks peaks = measure_unit_peaks(pool);
  nlohmann::ordered_json units;
  units["fma_f32_gflop_s"] = peaks.fma_f32_gflops;
  units["int8_dot_gop_s"] = peaks.int8_dot_gops;
  units["int8_dot_instruction"] = peaks.int8_dot_instruction;
  units["bf16_dot_gflop_s"] = peaks.bf16_dot_gflops;
  units["amx_bf16_gflop_s"] = peaks.amx_bf16_gflops;
  units["amx_int8_gop_s"] = peaks.amx_int8_gops;
  j["unit_peaks"] = units;
  j["fma_peak_gflop_s"] = peaks.fma_f32_gflops;
  auto unit_peak = [&](MatmulUnit u) {
    switch (u) {
      case MatmulUnit::FmaF32: return peaks.fma_f32_gflops;
      case MatmulUnit::Int8Dot: return peaks.int8_dot_gops;
      case MatmulUnit::Bf16Dot: return peaks.bf16_dot_gflops;
      case MatmulUnit::AmxInt8: return peaks.amx_int8_gops;
      case MatmulUnit::AmxBf16: return peaks.amx_bf16_gflops;
      case MatmulUnit::Int16Madd: return 0.0;  // not probed: no fraction
    }
    return 0.0;
  };
  // phase_unit_<case>, phase_unit_fraction_<case> (against the probe beside
  // the phase where there is one), phase_fma_fraction_<case>.
  auto fractions = [&](const char* phase, const char* which, const MatmulKernel& kernel) {
    const std::string figure = cat(phase, "_gflop_s_", which), beside = cat(phase, "_unit_peak_", which);
    if (!j.contains(figure)) return;
    const double v = j[figure].get<double>();
    const double unit = j.contains(beside) ? j[beside].get<double>() : unit_peak(kernel.unit);
    j[cat(phase, "_unit_", which)] = matmul_unit_name(kernel.unit);
    if (unit > 0) j[cat(phase, "_unit_fraction_", which)] = v / unit;
    j[cat(phase, "_fma_fraction_", which)] = v / peaks.fma_f32_gflops;
  };
  fractions("vision", "448x448", vision_kernel);
  fractions("vision", "1024x768", vision_kernel);
  fractions("vision", "page", vision_kernel);
  fractions("prefill", "256", prefill_kernel);
  // Last: it resets the peak-RSS mark that peak_rss_bytes read above.
  if (!skip_vision && !skip_video) video_figures(*engine, j);
  std::cout << j.dump(2) << "\n";
  return 0;
}

}  // namespace qvl::cli
