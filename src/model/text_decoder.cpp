#include "model/text_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/matmul.h"
#include "ops/ops.h"
#include "util/error.h"

namespace qvl {

TextDecoder::TextDecoder(const TextConfig& config, const TextWeights& weights, int64_t max_batch)
    : config_(config), w_(weights), rope_(config), max_batch_(std::max<int64_t>(1, max_batch)) {
  if (config.hidden_act != "silu" && !config.hidden_act.empty())
    fail("config.json: text_config.hidden_act '", config.hidden_act, "' is not supported (silu)");
  q_dim_ = int64_t{config.num_attention_heads} * config.head_dim;
  kv_dim_ = int64_t{config.num_key_value_heads} * config.head_dim;
  const int64_t b = max_batch_, h = config.hidden_size;
  x_.resize(b * h);
  xn_.resize(b * h);
  q_.resize(b * q_dim_);
  attn_.resize(b * q_dim_);
  gate_.resize(b * config.intermediate_size);
  up_.resize(b * config.intermediate_size);
  cos_.resize(b * config.head_dim / 2);
  sin_.resize(b * config.head_dim / 2);
  last_.resize(h);
}

KvCache TextDecoder::make_cache(int64_t capacity) const {
  return KvCache(config_.num_hidden_layers, capacity, kv_dim_);
}

void TextDecoder::forward(const TextInput& in, KvCache& cache, ThreadPool& pool, float* all_hidden, TextTrace* trace) {
  if (in.n <= 0) return;
  if (cache.kv_dim() != kv_dim_) fail("KV cache width ", cache.kv_dim(), " does not match the model (", kv_dim_, ")");
  if (cache.size() + in.n > cache.capacity())
    fail("context full: ", cache.size(), " cached + ", in.n, " new tokens exceed the context size of ",
         cache.capacity(), " tokens (--ctx-size)");
  if (trace && trace->layer_out.empty()) {
    trace->layer_out.resize(config_.num_hidden_layers);
    trace->after_layer.resize(config_.num_hidden_layers);
  }
  for (int64_t begin = 0; begin < in.n; begin += max_batch_)
    forward_chunk(in, begin, std::min(max_batch_, in.n - begin), cache, pool, all_hidden, trace);
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

// x += o_proj(attention(rope(q_norm(q)), rope(k_norm(k)), v)) with K/V written
// straight into the cache at their positions.
void TextDecoder::attention_block(const TextLayerWeights& w, int layer, int64_t n, KvCache& cache, ThreadPool& pool) {
  const int64_t h = config_.hidden_size, hd = config_.head_dim;
  const int64_t heads = config_.num_attention_heads, kv_heads = config_.num_key_value_heads;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const int64_t p0 = cache.size();
  float* k = cache.k(layer) + p0 * kv_dim_;  // [n, kv_heads*hd]
  float* v = cache.v(layer) + p0 * kv_dim_;

  rms_norm(x_.data(), w.input_norm.data(), xn_.data(), n, h, eps);
  matmul(xn_.data(), n, w.q.w, w.q.b(), q_.data(), pool);
  matmul(xn_.data(), n, h, w.k.w, w.k.b(), k, kv_dim_, pool);
  matmul(xn_.data(), n, h, w.v.w, w.v.b(), v, kv_dim_, pool);
  rms_norm(q_.data(), w.q_norm.data(), q_.data(), n * heads, hd, eps);  // per head
  rms_norm(k, w.k_norm.data(), k, n * kv_heads, hd, eps);
  rope(q_.data(), n, heads, hd, q_dim_, cos_.data(), sin_.data());
  rope(k, n, kv_heads, hd, kv_dim_, cos_.data(), sin_.data());

  AttentionParams p;
  p.nq = n;
  p.nkv = p0 + n;
  p.q_heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = hd;
  p.q_stride = q_dim_;
  p.kv_stride = kv_dim_;
  p.out_stride = q_dim_;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  p.causal = true;
  p.q_pos0 = p0;
  attention(q_.data(), cache.k(layer), cache.v(layer), attn_.data(), p, pool);
  matmul(attn_.data(), n, w.o.w, w.o.b(), xn_.data(), pool);
  add(x_.data(), xn_.data(), x_.data(), n * h);
}

// x += down(silu(gate(x̂)) * up(x̂)), x̂ = RMSNorm(x).
void TextDecoder::mlp_block(const TextLayerWeights& w, int64_t n, ThreadPool& pool) {
  const int64_t h = config_.hidden_size;
  rms_norm(x_.data(), w.post_norm.data(), xn_.data(), n, h, static_cast<float>(config_.rms_norm_eps));
  matmul(xn_.data(), n, w.gate.w, nullptr, gate_.data(), pool);
  matmul(xn_.data(), n, w.up.w, nullptr, up_.data(), pool);
  silu_mul(gate_.data(), up_.data(), gate_.data(), n * config_.intermediate_size);
  matmul(gate_.data(), n, w.down.w, nullptr, xn_.data(), pool);
  add(x_.data(), xn_.data(), x_.data(), n * h);
}

void TextDecoder::forward_chunk(const TextInput& in, int64_t begin, int64_t n, KvCache& cache, ThreadPool& pool,
                                float* all_hidden, TextTrace* trace) {
  const int64_t h = config_.hidden_size;
  auto record = [&](std::vector<float>& dst) { dst.insert(dst.end(), x_.begin(), x_.begin() + n * h); };
  embed(in, begin, n);
  if (trace) record(trace->inputs_embeds);
  rope_.fill(in.pos + begin, n, cos_.data(), sin_.data());
  const size_t deepstack = in.vision && in.vis_row ? in.vision->deepstack.size() : 0;
  for (int l = 0; l < config_.num_hidden_layers; ++l) {
    attention_block(w_.layers[l], l, n, cache, pool);
    mlp_block(w_.layers[l], n, pool);
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
  cache.set_size(cache.size() + n);
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
  matmul(hidden, rows, w_.lm_head, nullptr, out, pool);
}

}  // namespace qvl
