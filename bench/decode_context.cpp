// Aggregate decode of B streams at a document's context length, with each
// step's time split (issue 46 item 3). qvl bench's stream figures start after
// a 64-token prompt, where attention is a few percent of a step; a document
// page's answer is decoded after ~1,000 prompt tokens and grows to 1,500, and
// then each stream's KV is read once a step beside the weights.
//
//   decode_context --model DIR [--weights q8] [--context 1024] [--steps 64] [--streams 1,8] [--threads N]
//
// Prints one JSON object: per width, tokens/s and ms per step in matmuls,
// attention, lm_head and the rest.
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/decode_profile.h"
#include "model/model.h"
#include "model/positions.h"
#include "ops/ops.h"
#include "ops/thread_pool.h"
#include "util/error.h"
#include "util/formats.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model;
  qvl::WeightFormat weights = qvl::WeightFormat::Q8;
  int64_t context = 1024, steps = 64;
  std::vector<int> streams = {1, 8};
  int threads = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) qvl::fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--model") o.model = value();
    else if (a == "--weights") o.weights = qvl::parse_weight_format(value());
    else if (a == "--context") o.context = std::stoll(value());
    else if (a == "--steps") o.steps = std::stoll(value());
    else if (a == "--threads") o.threads = std::stoi(value());
    else if (a == "--streams") {
      o.streams.clear();
      std::stringstream list(value());
      for (std::string w; std::getline(list, w, ',');) o.streams.push_back(std::stoi(w));
    } else qvl::fail("unknown option " + a);
  }
  if (o.model.empty()) qvl::fail("--model DIR is required");
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  qvl::ThreadPool pool(o.threads);
  qvl::ModelLoadOptions load;
  load.format = o.weights;
  auto model = qvl::Model::load(o.model, load, pool);
  qvl::TextDecoder& text = model->text();
  const int64_t hid = model->config().text.hidden_size, vocab = model->config().text.vocab_size;
  const qvl::KvType kv = o.weights == qvl::WeightFormat::Q8 || o.weights == qvl::WeightFormat::Q4
                             ? qvl::KvType::F16 : qvl::KvType::F32;  // EngineParams::resolved_kv_type
  nlohmann::ordered_json out;
  out["weights"] = qvl::weight_format_name(o.weights);
  out["context"] = o.context;
  out["kv_type"] = qvl::kv_type_name(kv);
  for (const int b : o.streams) {
    std::vector<qvl::KvCache> caches;
    std::vector<qvl::KvCache*> cs;
    std::mt19937 rng(b);
    for (int s = 0; s < b; ++s) {
      caches.push_back(text.make_cache(o.context + o.steps + 1, kv));
      std::vector<int32_t> ids(o.context);
      std::vector<qvl::Pos3> pos(o.context);
      for (int64_t i = 0; i < o.context; ++i) {
        ids[i] = static_cast<int32_t>(rng() % 100000);
        pos[i] = {i, i, i};
      }
      text.forward({ids.data(), pos.data(), o.context}, caches.back(), pool);
    }
    for (auto& c : caches) cs.push_back(&c);
    std::vector<float> hidden(b * hid), logits(b * vocab);
    std::vector<int32_t> next(b, 1000);
    std::vector<qvl::Pos3> pos(b);
    qvl::DecodeProfile profile;
    text.set_profile(&profile);
    const Clock::time_point t = Clock::now();
    for (int64_t step = 0; step < o.steps; ++step) {
      for (int s = 0; s < b; ++s) pos[s] = qvl::generated_position(caches[s].size(), 0);
      text.forward_batch({next.data(), size_t(b)}, pos, {cs.data(), size_t(b)}, pool, hidden.data());
      {
        qvl::ProfileTimer timer(&profile.logits_ms);
        text.logits(hidden.data(), b, logits.data(), pool);
      }
      for (int s = 0; s < b; ++s) next[s] = static_cast<int32_t>(qvl::argmax(logits.data() + s * vocab, vocab));
    }
    const double s = std::chrono::duration<double>(Clock::now() - t).count();
    text.set_profile(nullptr);
    const double n = static_cast<double>(o.steps);
    nlohmann::ordered_json w;
    w["tok_s"] = b * n / s;
    w["step_ms"] = 1000 * s / n;
    w["matmul_ms"] = profile.matmul_ms / n;
    w["attention_ms"] = profile.attention_ms / n;
    w["logits_ms"] = profile.logits_ms / n;
    w["other_ms"] = 1000 * s / n - (profile.matmul_ms + profile.attention_ms + profile.logits_ms) / n;
    out[std::to_string(b) + "_streams"] = w;
    std::fprintf(stderr, "%d streams: %.1f tok/s\n", b, b * n / s);
  }
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "decode_context: %s\n", e.what());
  return 1;
}
