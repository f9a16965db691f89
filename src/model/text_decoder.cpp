#include "model/text_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/matmul.h"
#include "ops/ops.h"
#include "util/error.h"

namespace qvl {

double text_matmul_flops_per_token(const TextConfig& c) {
  const double h = c.hidden_size, q = double(c.num_attention_heads) * c.head_dim;
  const double kv = double(c.num_key_value_heads) * c.head_dim;
  double flops = 2.0 * c.num_hidden_layers * (h * (q + 2 * kv) + q * h);
  for (int l = 0; l < c.num_hidden_layers; ++l) flops += mlp_flops_per_token(c, l);
  return flops;
}

TextDecoder::TextDecoder(const TextConfig& config, const TextWeights& weights, int64_t max_batch)
    : config_(config), w_(weights), rope_(config), moe_(config), max_batch_(std::max<int64_t>(1, max_batch)) {
  q_dim_ = int64_t{config.num_attention_heads} * config.head_dim;
  kv_dim_ = int64_t{config.num_key_value_heads} * config.head_dim;
  last_.resize(config.hidden_size);
}

// Scratch grows to the largest chunk seen, so a model that only ever decodes,
// or prefills short prompts, never commits memory for max_batch rows; and a
// decode step after a long prefill gives that prefill's scratch back, so a
// decoding or idle server holds what kKeepRows rows need (interleaved prefill
// pieces are no larger, so they do not make it reallocate every step).
void TextDecoder::ensure_rows(int64_t n) {
  if (rows_ > kKeepRows && n <= kKeepRows) {
    for (std::vector<float>* v : {&x_, &xn_, &q_, &gate_, &up_, &cos_, &sin_, &k_, &v_})
      std::vector<float>().swap(*v);
    moe_.release();
    rows_ = 0;
  }
  if (n <= rows_) return;
  // gate_/up_ serve the dense layers only (the sparse ones have their own).
  bool dense = false;
  for (int l = 0; l < config_.num_hidden_layers; ++l) dense |= !config_.sparse_layer(l);
  const int64_t h = config_.hidden_size, im = dense ? config_.intermediate_size : 0;
  x_.resize(n * h);
  xn_.resize(n * h);
  q_.resize(n * q_dim_);
  gate_.resize(n * im);
  up_.resize(n * im);
  cos_.resize(n * config_.head_dim / 2);
  sin_.resize(n * config_.head_dim / 2);
  k_.resize(n * kv_dim_);
  v_.resize(n * kv_dim_);
  segs_.reserve(n);
  attention_jobs_.reserve(n);
  rows_ = n;
}

KvCache TextDecoder::make_cache(int64_t capacity, KvType type) const {
  return KvCache(config_.num_hidden_layers, capacity, kv_dim_, type);
}

void TextDecoder::check_room(const KvCache& cache, int64_t n) const {
  if (cache.kv_dim() != kv_dim_) fail("KV cache width ", cache.kv_dim(), " does not match the model (", kv_dim_, ")");
  if (cache.size() + n > cache.capacity())
    fail("context full: ", cache.size(), " cached + ", n, " new tokens exceed the context size of ",
         cache.capacity(), " tokens (--ctx-size)");
}

void TextDecoder::forward(const TextInput& in, KvCache& cache, ThreadPool& pool, float* all_hidden, TextTrace* trace) {
  if (in.n <= 0) return;
  check_room(cache, in.n);
  if (trace && trace->layer_out.empty()) {
    trace->layer_out.resize(config_.num_hidden_layers);
    trace->after_layer.resize(config_.num_hidden_layers);
    trace->router.resize(config_.num_hidden_layers);
  }
  for (int64_t begin = 0; begin < in.n; begin += max_batch_) {
    const int64_t n = std::min(max_batch_, in.n - begin);
    const Segment seg{&cache, 0, n, cache.size()};
    forward_chunk(in, begin, n, {&seg, 1}, pool, all_hidden, trace);
  }
}

void TextDecoder::forward_batch(std::span<const int32_t> ids, std::span<const Pos3> pos,
                                std::span<KvCache* const> caches, ThreadPool& pool, float* hidden) {
  if (caches.size() != ids.size()) fail("batched decode: ", ids.size(), " tokens and ", caches.size(), " caches");
  forward_pieces(ids, pos, caches, {}, pool, hidden);
}

void TextDecoder::forward_pieces(std::span<const int32_t> ids, std::span<const Pos3> pos,
                                 std::span<KvCache* const> caches, std::span<const int64_t> counts, ThreadPool& pool,
                                 float* hidden) {
  const int64_t b = static_cast<int64_t>(ids.size());
  const int64_t seqs = static_cast<int64_t>(caches.size());
  auto count = [&](int64_t i) { return counts.empty() ? 1 : counts[i]; };
  int64_t rows = 0;
  for (int64_t i = 0; i < seqs; ++i) {
    if (count(i) < 1) fail("batched decode: sequence ", i, " has ", count(i), " tokens");
    check_room(*caches[i], count(i));
    for (int64_t j = 0; j < i; ++j)
      if (caches[j] == caches[i]) fail("batched decode: sequences ", j, " and ", i, " share one KV cache");
    rows += count(i);
  }
  if (pos.size() != ids.size() || rows != b || (!counts.empty() && counts.size() != caches.size()))
    fail("batched decode: ", ids.size(), " tokens, ", pos.size(), " positions and ", rows, " rows over ", seqs,
         " caches");
  forward_segments(TextInput{ids.data(), pos.data(), b}, caches, counts, pool, hidden);
}

void TextDecoder::forward_prompts(const TextInput& in, std::span<KvCache* const> caches,
                                  std::span<const int64_t> counts, ThreadPool& pool, float* hidden) {
  if (counts.size() != caches.size())
    fail("packed prefill: ", counts.size(), " prompt lengths for ", caches.size(), " caches");
  int64_t rows = 0;
  for (size_t i = 0; i < caches.size(); ++i) {
    if (counts[i] < 1) fail("packed prefill: prompt ", i, " has ", counts[i], " tokens");
    check_room(*caches[i], counts[i]);
    for (size_t j = 0; j < i; ++j)
      if (caches[j] == caches[i]) fail("packed prefill: prompts ", j, " and ", i, " share one KV cache");
    rows += counts[i];
  }
  if (rows != in.n)
    fail("packed prefill: ", in.n, " tokens, ", rows, " rows over ", caches.size(), " caches");
  forward_segments(in, caches, counts, pool, hidden);
}

// Cuts the rows into chunks of max_batch and each chunk into its sequences'
// segments (a sequence may go on into the next chunk).
void TextDecoder::forward_segments(const TextInput& in, std::span<KvCache* const> caches,
                                   std::span<const int64_t> counts, ThreadPool& pool, float* hidden) {
  auto count = [&](int64_t i) { return counts.empty() ? 1 : counts[i]; };
  // Sequence `seq` has its rows from `taken` on still to compute.
  int64_t seq = 0, taken = 0;
  for (int64_t begin = 0; begin < in.n; begin += max_batch_) {
    const int64_t n = std::min(max_batch_, in.n - begin);
    ensure_rows(n);  // before segs_ is filled: growing it later would move what forward_chunk reads
    segs_.clear();
    for (int64_t row = 0; row < n; ++seq, taken = 0) {
      const int64_t len = std::min(count(seq) - taken, n - row);
      segs_.push_back({caches[seq], row, len, caches[seq]->size()});
      row += len;
      taken += len;
      if (taken < count(seq)) break;  // the piece goes on in the next chunk
    }
    forward_chunk(in, begin, n, segs_, pool, hidden, nullptr);
  }
}

int64_t TextDecoder::exact_piece() const { return kAttentionRowQueries; }

int64_t TextDecoder::exact_rows() const {
  int64_t rows = matmul_row_exact_rows(w_.lm_head.format());
  for (const TextLayerWeights& l : w_.layers)
    for (const WeightMatrix* x : l.matrices()) rows = std::min(rows, matmul_row_exact_rows(x->format()));
  return rows;
}

void TextDecoder::embed(const TextInput& in, int64_t begin, int64_t n) {
  const int64_t h = config_.hidden_size;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = in.ids[begin + i];
    float* row = &x_[i * h];
    if (in.vis_row && in.vis_row[begin + i] >= 0) {
      std::memcpy(row, &in.vision->embeds[in.vis_row[begin + i] * h], h * sizeof(float));
      continue;
    }
    if (id < 0 || id >= w_.embed.vocab) fail("token id ", id, " outside the vocabulary of ", w_.embed.vocab);
    if (w_.embed.bf16) {
      embed_bf16(w_.embed.bf16, h, &id, 1, row);
    } else {
      std::memcpy(row, w_.embed.f32 + int64_t{id} * h, h * sizeof(float));
    }
  }
}

// The arithmetic of a chunk's projections (ops/matmul.h): a prompt piece's
// rows as any prefill computes them, whatever its length.
static MatmulRows matmul_rows(bool prompt) { return prompt ? MatmulRows::Prompt : MatmulRows::Decode; }

// x += o_proj(attention(rope(q_norm(q)), rope(k_norm(k)), v)). One sequence's
// K/V are written straight into its cache at their positions; several
// sequences' go through k_/v_ and are then copied to their caches, and each
// sequence attends to its own cache only.
void TextDecoder::attention_block(const TextLayerWeights& w, int layer, int64_t n, std::span<const Segment> segs,
                                  bool prompt, ThreadPool& pool) {
  const int64_t h = config_.hidden_size, hd = config_.head_dim;
  const int64_t heads = config_.num_attention_heads, kv_heads = config_.num_key_value_heads;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  // Rounding to f16 happens on the way into the cache, so every query (this
  // chunk's included) sees the stored values.
  const bool direct = segs.size() == 1 && segs[0].cache->type() == KvType::F32;
  float* k = direct ? segs[0].cache->k(layer) + segs[0].p0 * kv_dim_ : k_.data();  // [n, kv_heads*hd]
  float* v = direct ? segs[0].cache->v(layer) + segs[0].p0 * kv_dim_ : v_.data();

  rms_norm(x_.data(), w.input_norm.data(), xn_.data(), n, h, eps);
  const MatmulOutput qkv[] = {{&w.q.w, w.q.b(), q_.data(), q_dim_}, {&w.k.w, w.k.b(), k, kv_dim_},
                              {&w.v.w, w.v.b(), v, kv_dim_}};
  {
    ProfileTimer timer(matmul_clock(prompt));
    matmul_each(xn_.data(), n, h, qkv, pool, matmul_rows(prompt));
  }
  {
    ProfileTimer timer(attention_clock(prompt));
    rms_norm(q_.data(), w.q_norm.data(), q_.data(), n * heads, hd, eps);  // per head
    rms_norm(k, w.k_norm.data(), k, n * kv_heads, hd, eps);
    rope(q_.data(), n, heads, hd, q_dim_, cos_.data(), sin_.data());
    rope(k, n, kv_heads, hd, kv_dim_, cos_.data(), sin_.data());

    // Every sequence's attention in one call, so a batched decode's streams
    // share one parallel step (attention_batch), each to its own cache.
    attention_jobs_.clear();
    for (const Segment& s : segs) {
      const bool f16 = s.cache->type() == KvType::F16;
      if (f16) {
        f32_to_f16(k + s.row * kv_dim_, s.cache->k16(layer) + s.p0 * kv_dim_, s.n * kv_dim_);
        f32_to_f16(v + s.row * kv_dim_, s.cache->v16(layer) + s.p0 * kv_dim_, s.n * kv_dim_);
      } else if (!direct) {
        std::memcpy(s.cache->k(layer) + s.p0 * kv_dim_, k + s.row * kv_dim_, s.n * kv_dim_ * sizeof(float));
        std::memcpy(s.cache->v(layer) + s.p0 * kv_dim_, v + s.row * kv_dim_, s.n * kv_dim_ * sizeof(float));
      }
      AttentionJob& job = attention_jobs_.emplace_back();
      job.q = &q_[s.row * q_dim_];
      job.out = &q_[s.row * q_dim_];
      if (f16) {
        job.k16 = s.cache->k16(layer);
        job.v16 = s.cache->v16(layer);
      } else {
        job.k = s.cache->k(layer);
        job.v = s.cache->v(layer);
      }
      AttentionParams& p = job.p;
      p.nq = s.n;
      p.nkv = s.p0 + s.n;
      p.q_heads = heads;
      p.kv_heads = kv_heads;
      p.head_dim = hd;
      p.q_stride = q_dim_;
      p.kv_stride = kv_dim_;
      p.out_stride = q_dim_;
      p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
      p.causal = true;
      p.q_pos0 = s.p0;
      p.precision = attention_precision(w.q.w);
      p.prompt = prompt;
    }
    attention_batch(attention_jobs_, pool);
  }
  {
    ProfileTimer timer(matmul_clock(prompt));
    matmul(q_.data(), n, w.o.w, w.o.b(), xn_.data(), pool, matmul_rows(prompt));  // attention wrote its output over q
  }
  add(x_.data(), xn_.data(), x_.data(), n * h);
}

// x += MLP(x̂), x̂ = RMSNorm(x): dense, down(silu(gate(x̂)) * up(x̂)), or the
// mixture of such experts (text_mlp.h).
void TextDecoder::mlp_block(const TextLayerWeights& layer, int64_t n, bool prompt, ThreadPool& pool,
                            RouterTrace* trace) {
  const int64_t h = config_.hidden_size, im = config_.intermediate_size;
  const TextMlpWeights& w = layer.mlp;
  rms_norm(x_.data(), layer.post_norm.data(), xn_.data(), n, h, static_cast<float>(config_.rms_norm_eps));
  if (w.sparse) {
    {
      ProfileTimer timer(matmul_clock(prompt));
      moe_.forward(w.moe, xn_.data(), n, xn_.data(), pool, trace, matmul_rows(prompt));
    }
    add(x_.data(), xn_.data(), x_.data(), n * h);
    return;
  }
  const MatmulOutput gate_up[] = {{&w.gate.w, nullptr, gate_.data(), im}, {&w.up.w, nullptr, up_.data(), im}};
  {
    ProfileTimer timer(matmul_clock(prompt));  // silu_mul's share is small beside the three products
    matmul_each(xn_.data(), n, h, gate_up, pool, matmul_rows(prompt));
    // Per row, so a row meets the same vector/tail split as in a call of its own.
    for (int64_t r = 0; r < n; ++r) silu_mul(&gate_[r * im], &up_[r * im], &gate_[r * im], im);
    matmul(gate_.data(), n, w.down.w, nullptr, xn_.data(), pool, matmul_rows(prompt));
  }
  add(x_.data(), xn_.data(), x_.data(), n * h);
}

void TextDecoder::forward_chunk(const TextInput& in, int64_t begin, int64_t n, std::span<const Segment> segs,
                                ThreadPool& pool, float* all_hidden, TextTrace* trace) {
  ensure_rows(n);
  const int64_t h = config_.hidden_size;
  auto record = [&](std::vector<float>& dst) { dst.insert(dst.end(), x_.begin(), x_.begin() + n * h); };
  embed(in, begin, n);
  if (trace) record(trace->inputs_embeds);
  rope_.fill(in.pos + begin, n, cos_.data(), sin_.data());
  const size_t deepstack = in.vision && in.vis_row ? in.vision->deepstack.size() : 0;
  for (int l = 0; l < config_.num_hidden_layers; ++l) {
    attention_block(w_.layers[l], l, n, segs, in.prompt, pool);
    mlp_block(w_.layers[l], n, in.prompt, pool, trace ? &trace->router[l] : nullptr);
    if (trace) record(trace->layer_out[l]);
    if (static_cast<size_t>(l) < deepstack) {
      const std::vector<float>& feat = in.vision->deepstack[l];  // [tokens, hidden]
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = in.vis_row[begin + i];
        if (r >= 0) add(&x_[i * h], &feat[r * h], &x_[i * h], h);
      }
    }
    if (trace) record(trace->after_layer[l]);
  }
  for (const Segment& s : segs) s.cache->set_size(s.p0 + s.n);
  // The final norm is needed for every row only when asked for.
  const float eps = static_cast<float>(config_.rms_norm_eps);
  if (all_hidden || trace) {
    rms_norm(x_.data(), w_.norm.data(), xn_.data(), n, h, eps);
    if (all_hidden) std::memcpy(all_hidden + begin * h, xn_.data(), n * h * sizeof(float));
    if (trace) trace->final_norm.insert(trace->final_norm.end(), xn_.begin(), xn_.begin() + n * h);
  }
  rms_norm(&x_[(n - 1) * h], w_.norm.data(), last_.data(), 1, h, eps);
}

void TextDecoder::logits(const float* hidden, int64_t rows, float* out, ThreadPool& pool) const {
  if (!w_.has_head())
    fail("the checkpoint has untied embeddings and no lm_head.weight, so the model has no output head: it can "
         "only compute embeddings (--task embed)");
  matmul(hidden, rows, w_.lm_head, nullptr, out, pool);
}

}  // namespace qvl
