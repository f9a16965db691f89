#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/ops.h"
#include "util/error.h"

namespace qvl {

Sampler::Sampler(const SamplerConfig& config, int64_t vocab)
    : config_(config), vocab_(vocab), rng_(config.seed) {
  // Vocabulary-sized scratch only for what this request uses (a greedy one
  // without penalties needs none).
  if (config.repetition_penalty != 1.0) seen_.assign(vocab, 0);
  if (config.presence_penalty != 0.0 || config.frequency_penalty != 0.0) counts_.assign(vocab, 0);
  if (!config.greedy()) candidates_.reserve(vocab);
  if (config.temperature < 0 || !std::isfinite(config.temperature)) fail("temperature must be >= 0");
  if (config.top_p <= 0 || config.top_p > 1) fail("top_p must be in (0, 1]");
  if (config.min_p < 0 || config.min_p > 1) fail("min_p must be in [0, 1]");
  if (config.top_k < 0) fail("top_k must be >= 0");
  if (config.repetition_penalty <= 0) fail("repetition_penalty must be > 0");
}

void Sampler::apply_penalties(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated) {
  if (config_.repetition_penalty != 1.0) {
    // transformers' RepetitionPenaltyLogitsProcessor: each distinct token seen
    // once: positive logits divided, negative multiplied.
    const float p = static_cast<float>(config_.repetition_penalty);
    for (int32_t id : context) {
      if (id < 0 || id >= vocab_ || seen_[id]) continue;
      seen_[id] = 1;
      touched_.push_back(id);
      logits[id] = logits[id] > 0 ? logits[id] / p : logits[id] * p;
    }
    for (int32_t id : touched_) seen_[id] = 0;
    touched_.clear();
  }
  if (config_.presence_penalty != 0.0 || config_.frequency_penalty != 0.0) {
    for (int32_t id : generated) {
      if (id < 0 || id >= vocab_) continue;
      if (counts_[id]++ == 0) touched_.push_back(id);
    }
    for (int32_t id : touched_) {
      logits[id] -= static_cast<float>(config_.presence_penalty + config_.frequency_penalty * counts_[id]);
      counts_[id] = 0;
    }
    touched_.clear();
  }
}

int32_t Sampler::sample(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated) {
  return sample(logits, context, generated, SampleStep{});
}

void Sampler::shape(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated,
                    const SampleStep& step) {
  apply_penalties(logits, context, generated);
  for (const auto& [id, bias] : config_.logit_bias)
    if (id >= 0 && id < vocab_) logits[id] += bias;
  if (step.allowed) apply_mask(logits, step);
}

int32_t Sampler::sample(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated,
                        const SampleStep& step) {
  shape(logits, context, generated, step);
  const int32_t token = choose(logits);
  if (step.top_logprobs >= 0 && step.logprob) fill_logprob(logits, token, step);
  return token;
}

void Sampler::score(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated,
                    const SampleStep& step, int32_t token) {
  if (step.top_logprobs < 0 || !step.logprob) return;
  shape(logits, context, generated, step);
  fill_logprob(logits, token, step);
}

// Disallowed tokens get -inf, so every later stage (softmax, top-k, top-p)
// sees exactly the constrained distribution.
void Sampler::apply_mask(float* logits, const SampleStep& step) {
  kept_.clear();
  for (int32_t id : step.also_allowed) kept_.push_back(id >= 0 && id < vocab_ ? logits[id] : 0.0f);
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t words = (vocab_ + 63) / 64;
  bool any = false;
  for (int64_t w = 0; w < words; ++w) {
    uint64_t bits = step.allowed[w];
    if (bits == ~uint64_t{0}) {
      any = true;  // its first bit is a real token (base < vocab)
      continue;
    }
    const int64_t base = w * 64;
    const int64_t end = std::min<int64_t>(64, vocab_ - base);
    if (bits == 0) {  // most words of a narrow mask: no bit to look at
      std::fill_n(logits + base, end, ninf);
      continue;
    }
    any = true;
    for (int64_t b = 0; b < end; ++b)
      if (!((bits >> b) & 1)) logits[base + b] = ninf;
  }
  for (size_t k = 0; k < step.also_allowed.size(); ++k) {
    const int32_t id = step.also_allowed[k];
    if (id < 0 || id >= vocab_) continue;
    logits[id] = kept_[k];
    any = true;
  }
  if (!any) fail("constrained decoding: no token is allowed here (the grammar reached a dead end)");
}

namespace {

// Keeps in `heap` the k best items offered (by `better`; the heap's front is
// the worst kept). Returns whether x was kept.
template <class T, class Better>
bool keep_best(std::vector<T>& heap, const T& x, size_t k, Better better) {
  if (heap.size() < k) {
    heap.push_back(x);
  } else if (better(x, heap.front())) {
    std::pop_heap(heap.begin(), heap.end(), better);
    heap.back() = x;
  } else {
    return false;
  }
  std::push_heap(heap.begin(), heap.end(), better);
  return true;
}

}  // namespace

// log_softmax(logits / T) over the allowed tokens; T is 1 when greedy.
void Sampler::fill_logprob(const float* logits, int32_t token, const SampleStep& step) {
  const double t = config_.greedy() ? 1.0 : config_.temperature;
  // Vectorised: a double exp per token of the vocabulary took 0.87 ms a step.
  const double lse = log_sum_exp(logits, vocab_, static_cast<float>(1.0 / t));
  auto lp = [&](int32_t id) { return static_cast<float>(logits[id] / t - lse); };
  TokenLogprob& out = *step.logprob;
  out.token = token;
  out.logprob = lp(token);
  out.top.clear();
  const size_t want = static_cast<size_t>(step.top_logprobs);
  if (want == 0) return;
  // The `want` largest finite logits: a min-heap of that size over one pass.
  // "More likely first" as the heap's order puts the least likely of the kept ones at its front.
  auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::vector<int32_t>& heap = top_ids_;
  heap.clear();
  float worst = -std::numeric_limits<float>::infinity();  // the front's logit once the heap is full
  for (int64_t i = 0; i < vocab_; ++i) {
    // Below the kept ones, or masked: one comparison (an equal logit is left to `better`).
    if (!(logits[i] >= worst) || logits[i] == -std::numeric_limits<float>::infinity()) continue;
    if (keep_best(heap, static_cast<int32_t>(i), want, better) && heap.size() == want) worst = logits[heap.front()];
  }
  std::sort(heap.begin(), heap.end(), better);
  for (int32_t id : heap) out.top.emplace_back(id, lp(id));
}

namespace {

using Candidate = std::pair<float, int32_t>;  // (logit / T, id)

// Best first: larger value, then smaller id (a total order, so the survivors
// and their order never depend on how they were found).
bool better(const Candidate& a, const Candidate& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// The candidates in `better` order, sorted only as far as asked: top-p, min-p
// and the draw look at a short prefix of a 152k vocabulary, which a full
// sort (12 ms a token on a Zen 5 VM, as long as the whole 2B q4 decode step)
// would order in vain.
class Ordered {
 public:
  explicit Ordered(std::vector<Candidate>& c) : c_(c) {}
  const Candidate& operator[](size_t n) {
    if (n >= sorted_) {
      // Everything past sorted_ is no better than what precedes it, so the
      // next prefix is the best of the rest, sorted. Growing 4x keeps the
      // total work near one sort of what is finally looked at. A short prefix
      // is a partial sort (a heap that rejects most tokens with one
      // comparison); a long one a selection, then a sort: where top-p needed
      // most of a flat distribution, partial sorts alone took 9.6 ms.
      const size_t upto = std::min(c_.size(), std::max({n + 1, sorted_ * 4, size_t{64}}));
      const auto first = c_.begin() + static_cast<std::ptrdiff_t>(sorted_);
      const auto last = c_.begin() + static_cast<std::ptrdiff_t>(upto);
      if (upto - sorted_ <= 1024) {
        std::partial_sort(first, last, c_.end(), better);
      } else {
        if (last != c_.end()) std::nth_element(first, last, c_.end(), better);
        std::sort(first, last, better);
      }
      sorted_ = upto;
    }
    return c_[n];
  }

 private:
  std::vector<Candidate>& c_;
  size_t sorted_ = 0;
};

}  // namespace

int32_t Sampler::choose(float* logits) {
  if (config_.greedy()) return static_cast<int32_t>(argmax(logits, vocab_));

  const float inv_t = static_cast<float>(1.0 / config_.temperature);
  candidates_.clear();
  if (config_.top_k > 0 && config_.top_k < vocab_) {
    // The k best in one pass: a heap whose front is the worst kept, so most
    // tokens cost one comparison.
    const size_t k = static_cast<size_t>(config_.top_k);
    float worst = -std::numeric_limits<float>::infinity();  // the front's value once the heap is full
    for (int64_t i = 0; i < vocab_; ++i) {
      const float v = logits[i] * inv_t;
      if (v < worst) continue;  // not among the k best (an equal value is left to `better`)
      if (keep_best(candidates_, Candidate(v, static_cast<int32_t>(i)), k, better) && candidates_.size() == k)
        worst = candidates_.front().first;
    }
    std::sort(candidates_.begin(), candidates_.end(), better);
  } else {
    for (int64_t i = 0; i < vocab_; ++i) candidates_.emplace_back(logits[i] * inv_t, static_cast<int32_t>(i));
  }
  Ordered sorted(candidates_);
  // Softmax over the survivors, unnormalized: p(n) of the n-th best.
  const float top = sorted[0].first;
  auto p = [&](size_t n) { return std::exp(sorted[n].first - top); };
  // The normaliser adds the terms in the candidates' present order: sorted
  // after top-k; otherwise as the partial sorts left them, which moves only
  // the last bits of a double.
  double sum = 0;
  for (const Candidate& c : candidates_) sum += std::exp(c.first - top);
  size_t keep = candidates_.size();
  // top-p: the smallest prefix whose probability reaches p (at least one).
  if (config_.top_p < 1.0) {
    double cum = 0;
    size_t n = 0;
    while (n < keep) {
      cum += p(n) / sum;
      ++n;
      if (cum >= config_.top_p) break;
    }
    keep = n;
  }
  // min-p: drop tokens less likely than min_p × the most likely one.
  if (config_.min_p > 0.0) {
    const double floor = config_.min_p * p(0);
    size_t n = 1;
    while (n < keep && p(n) >= floor) ++n;
    keep = n;
  }
  double total = sum;
  if (keep < candidates_.size()) {
    total = 0;
    for (size_t n = 0; n < keep; ++n) total += p(n);
  }
  const double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  double acc = 0;
  for (size_t n = 0; n < keep; ++n) {
    acc += p(n);
    if (r < acc) return sorted[n].second;
  }
  return sorted[keep - 1].second;  // r within rounding of the total
}

}  // namespace qvl
