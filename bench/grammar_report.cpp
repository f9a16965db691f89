// Prints, as JSON, what constrained decoding costs with the real Qwen
// vocabulary (151,936 ids) and the invoice schema: vocabulary and schema
// compile times, allowed() on a cache miss and on a hit over random
// generations, states and masks, peak mask cache bytes. The machine limit
// beside the miss figures: one plain pass over the vocabulary trie, the least
// work a mask that visits every node (inside a string) can do.
//
//   grammar_report [path/to/tokenizer.json] [--generations N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../tests/grammar/random_gen.h"
#include "../tests/grammar/schemas.h"
#include "../tests/grammar/vocab.h"
#include "grammar/grammar.h"
#include "grammar/token_vocab_impl.h"

namespace {

using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Median seconds of `reps` runs.
double median_seconds(int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::shared_ptr<qvl::TokenGrammar> compile(const std::string& schema, const std::shared_ptr<const qvl::TokenVocab>& vocab) {
  qvl::GrammarBuilder b;
  return qvl::TokenGrammar::create(b.build(b.json_schema(ojson::parse(schema), "schema")), vocab);
}

// Median seconds of allowed() on a fresh grammar after `prefix`: a cache miss.
double miss_seconds(const std::string& schema, const std::shared_ptr<const qvl::TokenVocab>& vocab, const std::string& prefix,
                    size_t* allowed) {
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    const auto g = compile(schema, vocab);
    qvl::GrammarMatcher m(g);
    if (!m.accept_bytes(prefix)) throw std::runtime_error("bench: prefix refused: " + prefix);
    const auto t0 = Clock::now();
    *allowed = m.allowed().count();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

nlohmann::json summary(const std::vector<double>& s) {
  if (s.empty()) return {{"count", 0}};
  double sum = 0;
  for (double x : s) sum += x;
  std::vector<double> sorted = s;
  std::sort(sorted.begin(), sorted.end());
  return {{"count", s.size()},
          {"mean_us", sum / static_cast<double>(s.size()) * 1e6},
          {"p50_us", sorted[sorted.size() / 2] * 1e6},
          {"p99_us", sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)] * 1e6},
          {"max_us", sorted.back() * 1e6}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer =
      (std::filesystem::path(__FILE__).parent_path() / "../tests/fixtures/tiny-qwen3vl/tokenizer.json").string();
  int generations = 50;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--generations") && i + 1 < argc) generations = std::atoi(argv[++i]);
    else tokenizer = argv[i];
  }
  nlohmann::ordered_json out;

  // Vocabulary: parsing tokenizer.json is the test helper's; the trie is qvl's.
  std::vector<std::string> bytes = qvl::test::qwen_token_bytes(tokenizer);
  auto t0 = Clock::now();
  const auto vocab = std::make_shared<const qvl::TokenVocab>(std::move(bytes));
  const double trie_s = seconds_since(t0);
  const auto& trie = vocab->impl().trie;
  out["vocab"] = {{"tokens", vocab->size()}, {"trie_nodes", trie.size()}, {"trie_bytes", trie.size() * sizeof(trie[0])},
                  {"trie_build_ms", trie_s * 1e3}};

  // The limit: one pass over every trie node, reading what a mask scan reads.
  uint64_t sink = 0;
  const double scan_s = median_seconds(15, [&] {
    for (const auto& n : trie) sink += n.byte + n.depth + n.token;
  });
  out["machine"] = {{"trie_pass_ms", scan_s * 1e3}, {"sink", sink & 1}};

  const std::string schema = qvl::test::kInvoiceSchema;
  out["schema_compile_ms"] = median_seconds(21, [&] { compile(schema, vocab); }) * 1e3;

  size_t n_string = 0, n_start = 0, n_number = 0;
  out["miss"] = {
      {"start_ms", miss_seconds(schema, vocab, "", &n_start) * 1e3},
      {"start_allowed", n_start},
      {"inside_string_ms", miss_seconds(schema, vocab, "{\"invoice_number\":\"", &n_string) * 1e3},
      {"inside_string_allowed", n_string},
      {"after_colon_number_ms",
       miss_seconds(schema, vocab,
                    "{\"invoice_number\":\"A\",\"date\":\"2024-01-02\",\"vendor\":{\"name\":\"V\"},\"line_items\":[{"
                    "\"description\":\"d\",\"quantity\":1,\"unit_price\":2}],\"subtotal\":",
                    &n_number) *
           1e3},
      {"after_colon_number_allowed", n_number},
  };

  // Random generations sharing one TokenGrammar, as requests with the same schema do.
  const auto g = compile(schema, vocab);
  const qvl::test::RandomGenerator gen(*vocab);
  std::mt19937 rng(1);
  std::vector<qvl::test::AllowedCall> calls;
  size_t tokens = 0;
  int finished = 0;
  t0 = Clock::now();
  for (int i = 0; i < generations; ++i) {
    const auto r = gen.run(g, rng, 400, &calls);
    tokens += static_cast<size_t>(r.tokens);
    finished += r.finished;
  }
  const double gen_s = seconds_since(t0);
  std::vector<double> hit, miss, first_gen;
  for (const auto& c : calls) (c.miss ? miss : hit).push_back(c.seconds);
  const auto st = g->stats();
  out["generations"] = {{"count", generations},
                        {"finished", finished},
                        {"tokens_per_generation", static_cast<double>(tokens) / generations},
                        {"wall_s", gen_s},
                        {"allowed_hit", summary(hit)},
                        {"allowed_miss", summary(miss)},
                        {"states", st.states},
                        {"masks", st.masks},
                        {"masks_computed", st.masks_computed},
                        {"peak_mask_cache_bytes", st.peak_mask_bytes},
                        {"resets", st.resets}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
