#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>

#include "ops/matmul.h"
#include "ops/ops.h"
#include "util/error.h"

namespace qvl {
namespace {

// GELU, exact ("gelu") or the tanh approximation ("gelu_pytorch_tanh" and its
// other names): the only activations config.json may name (io/model_config.cpp).
void activation(const std::string& name, float* x, int64_t n) {
  if (name == "gelu") gelu_erf(x, n);
  else gelu_tanh(x, n);
}

// torch.linspace(0, end, steps) in float32: the first half counts up from 0,
// the second half down from `end` (ATen's RangeFactories kernel).
std::vector<float> linspace(float end, int steps) {
  std::vector<float> v(steps);
  if (steps == 1) {
    v[0] = 0;
    return v;
  }
  const float step = end / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  for (int i = 0; i < steps; ++i)
    v[i] = i < halfway ? step * static_cast<float>(i) : end - step * static_cast<float>(steps - i - 1);
  return v;
}

// Row-wise work split over the pool. The element-wise steps are a few percent
// of the encoder's work but would run on one core while the others idle.
template <class F>
void parallel_rows(ThreadPool& pool, int64_t rows, const F& f) {
  pool.parallel_for(rows, [&](int64_t b, int64_t e, int) {
    if (b < e) f(b, e);
  });
}

// x [rows, dim] += r; xn = LayerNorm(x): one pass over the rows while they are in cache.
void add_layer_norm(float* x, const float* r, const NormWeights& norm, float eps, float* xn, int64_t rows, int64_t dim,
                    ThreadPool& pool) {
  parallel_rows(pool, rows, [&](int64_t b, int64_t e) {
    if (r) add(x + b * dim, r + b * dim, x + b * dim, (e - b) * dim);
    layer_norm(x + b * dim, norm.weight.data(), norm.bias.data(), xn + b * dim, e - b, dim, eps);
  });
}

}  // namespace

VisionEncoder::VisionEncoder(const VisionConfig& config, const VisionWeights& weights)
    : config_(config), w_(weights), rope_(config.head_dim()) {
  side_ = static_cast<int>(std::lround(std::sqrt(static_cast<double>(config.num_position_embeddings))));
}

// fast_pos_embed_interpolate: sample the side×side table at linspace(0, side-1)
// along each axis (align-corners bilinear); rows are in merge-window order and
// every temporal frame gets the same embedding.
void VisionEncoder::add_position_embeddings(const ImageGrid& g, float* x, ThreadPool& pool) const {
  const int64_t hid = config_.hidden_size;
  const int m = config_.spatial_merge_size;
  const std::vector<float> hs = linspace(static_cast<float>(side_ - 1), g.h);
  const std::vector<float> ws = linspace(static_cast<float>(side_ - 1), g.w);
  const int64_t per_frame = int64_t{g.h} * g.w;
  const Embedding& table = w_.pos_embed;
  parallel_rows(pool, g.patches(), [&](int64_t b, int64_t e) {
    std::vector<float> corners(table.bf16 ? 4 * hid : 0);  // the four table rows, widened exactly
    for (int64_t row = b; row < e; ++row) {
      // row -> (frame, merge block, position in the block) -> pixel (y, xx)
      const int64_t in_frame = row % per_frame, block = in_frame / (m * m), at = in_frame % (m * m);
      const int y = static_cast<int>(block / (g.w / m)) * m + static_cast<int>(at / m);
      const int xx = static_cast<int>(block % (g.w / m)) * m + static_cast<int>(at % m);
      const int y0 = static_cast<int>(hs[y]), y1 = std::min(y0 + 1, side_ - 1);
      const int x0 = static_cast<int>(ws[xx]), x1 = std::min(x0 + 1, side_ - 1);
      const float dy = hs[y] - static_cast<float>(y0), dx = ws[xx] - static_cast<float>(x0);
      const float wt[4] = {(1 - dy) * (1 - dx), (1 - dy) * dx, dy * (1 - dx), dy * dx};
      const int32_t ids[4] = {y0 * side_ + x0, y0 * side_ + x1, y1 * side_ + x0, y1 * side_ + x1};
      const float *e0, *e1, *e2, *e3;
      if (table.bf16) {
        embed_bf16(table.bf16, hid, ids, 4, corners.data());
        e0 = corners.data(), e1 = e0 + hid, e2 = e1 + hid, e3 = e2 + hid;
      } else {
        e0 = table.f32 + ids[0] * hid, e1 = table.f32 + ids[1] * hid;
        e2 = table.f32 + ids[2] * hid, e3 = table.f32 + ids[3] * hid;
      }
      float* out = x + row * hid;
      // (e0·w0 + e1·w1 + e2·w2 + e3·w3) first, then added to x: the reference's order.
      for (int64_t c = 0; c < hid; ++c) out[c] += e0[c] * wt[0] + e1[c] * wt[1] + e2[c] * wt[2] + e3[c] * wt[3];
    }
  });
}

// The two halves of a block: x += proj(attention(rope(q), rope(k), v)), then
// x += fc2(act(fc1(LN(x)))).
// On entry s.xn_ holds norm1(x) (the previous block's MLP half, or embed(),
// fused it with its residual add); on return it holds norm2(x).
void VisionEncoder::attention_half(const VisionBlockWeights& w, VisionEncoding& s, ThreadPool& pool) const {
  const int64_t n = s.n_, hid = config_.hidden_size, heads = config_.num_heads, hd = config_.head_dim();
  const float eps = static_cast<float>(config_.layer_norm_eps);
  float* x = s.x_.data();      // [n, hidden]
  float* xn = s.xn_.data();    // [n, hidden]
  float* qkv = s.qkv_.data();  // [n, (q|k|v), heads, hd]
  float* tmp = s.tmp_.data();  // [n, hidden]
  const float* cos = s.cos_.data();
  const float* sin = s.sin_.data();
  matmul(xn, n, w.qkv.w, w.qkv.b(), qkv, pool);
  parallel_rows(pool, n, [&](int64_t b, int64_t e) {
    const int64_t half = hd / 2;
    rope(qkv + b * 3 * hid, e - b, heads, hd, 3 * hid, cos + b * half, sin + b * half);
    rope(qkv + b * 3 * hid + hid, e - b, heads, hd, 3 * hid, cos + b * half, sin + b * half);
  });
  AttentionParams p;
  p.nq = p.nkv = n;
  p.q_heads = p.kv_heads = heads;
  p.head_dim = hd;
  p.q_stride = p.kv_stride = 3 * hid;
  p.out_stride = hid;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  p.precision = attention_precision(w.qkv.w);
  attention_segments(qkv, qkv + hid, qkv + 2 * hid, xn, p, s.segments_.data(),
                     static_cast<int64_t>(s.segments_.size()) - 1, pool);
  matmul(xn, n, w.proj.w, w.proj.b(), tmp, pool);
  add_layer_norm(x, tmp, w.norm2, eps, xn, n, hid, pool);
}

// On return s.xn_ holds the next block's norm1(x): the MLP's residual add is
// fused with it (a plain add after the last block).
void VisionEncoder::mlp_half(int b, VisionEncoding& s, ThreadPool& pool) const {
  const VisionBlockWeights& w = w_.blocks[b];
  const int64_t n = s.n_, hid = config_.hidden_size;
  const float eps = static_cast<float>(config_.layer_norm_eps);
  float* x = s.x_.data();
  float* xn = s.xn_.data();
  float* tmp = s.tmp_.data();
  // The MLP runs in row chunks so its [rows, intermediate] buffer stays bounded
  // for very large images.
  const int64_t inter = config_.intermediate_size, chunk = kMlpChunk;
  float* h1 = s.h1_.data();
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int64_t rows = std::min(chunk, n - r0);
    matmul(xn + r0 * hid, rows, w.fc1.w, w.fc1.b(), h1, pool);
    parallel_rows(pool, rows, [&](int64_t rb, int64_t re) { activation(config_.hidden_act, h1 + rb * inter, (re - rb) * inter); });
    matmul(h1, rows, w.fc2.w, w.fc2.b(), tmp + r0 * hid, pool);
  }
  if (b + 1 == config_.depth) {
    parallel_rows(pool, n, [&](int64_t rb, int64_t re) { add(x + rb * hid, tmp + rb * hid, x + rb * hid, (re - rb) * hid); });
  } else {
    add_layer_norm(x, tmp, w_.blocks[b + 1].norm1, eps, xn, n, hid, pool);
  }
  if (s.trace_) s.trace_->blocks.push_back(s.x_);
}

// Qwen3VLVisionPatchMerger: each group of merge² consecutive patch rows becomes
// one row of merge²·hidden; LayerNorm before (final merger, over hidden) or
// after (DeepStack, over merge²·hidden) the regrouping; fc1 -> exact GELU -> fc2.
void VisionEncoder::merge(const MergerWeights& w, bool postshuffle_norm, const float* x, int64_t n, float* out,
                          ThreadPool& pool) const {
  const int64_t hid = config_.hidden_size, m2 = int64_t{config_.spatial_merge_size} * config_.spatial_merge_size;
  const int64_t rows = n / m2, wide = hid * m2;
  std::vector<float> xn(n * hid), h1(rows * wide);
  // Either way a merged row is m2 consecutive patch rows, so rows split cleanly.
  parallel_rows(pool, rows, [&](int64_t b, int64_t e) {
    const float* gamma = w.norm.weight.data();
    const float* beta = w.norm.bias.data();
    if (postshuffle_norm)
      layer_norm(x + b * wide, gamma, beta, xn.data() + b * wide, e - b, wide, 1e-6f);
    else
      layer_norm(x + b * wide, gamma, beta, xn.data() + b * wide, (e - b) * m2, hid, 1e-6f);
  });
  matmul(xn.data(), rows, w.fc1.w, w.fc1.b(), h1.data(), pool);
  parallel_rows(pool, rows, [&](int64_t b, int64_t e) { gelu_erf(h1.data() + b * wide, (e - b) * wide); });
  matmul(h1.data(), rows, w.fc2.w, w.fc2.b(), out, pool);
}

VisionEncoding VisionEncoder::begin(std::span<const VisionInput> images, VisionTrace* trace) const {
  const int m = config_.spatial_merge_size;
  const double hid = config_.hidden_size, inter = config_.intermediate_size;
  VisionEncoding s;
  s.images_.assign(images.begin(), images.end());
  s.trace_ = trace;
  double attention = 0;  // QKᵀ and PV within each frame, summed over the images
  for (const VisionInput& img : images) {
    const ImageGrid& g = img.grid;
    if (g.t < 1 || g.h < m || g.w < m || g.h % m || g.w % m)
      fail("image grid ", g.t, "x", g.h, "x", g.w, " is not a positive multiple of the merge size ", m);
    s.n_ += g.patches();
    s.out_.image_tokens.push_back(g.tokens(m));
    s.out_.tokens += g.tokens(m);
    attention += 2 * static_cast<double>(g.patches()) * (double(g.h) * g.w) * hid;
  }
  if (s.n_ == 0) return s;

  // Multiply-adds ×2 of each piece; they add up to flops().
  const double n = static_cast<double>(s.n_), rows = static_cast<double>(s.out_.tokens);
  const double wide = hid * m * m;
  const double merger = 2 * rows * (wide * wide + wide * config_.out_hidden_size);
  using Kind = VisionEncoding::Kind;
  s.plan_.push_back({Kind::Embed, 0, 2 * n * static_cast<double>(w_.patch_embed.w.cols()) * hid});
  const std::vector<int>& ds_index = config_.deepstack_visual_indexes;
  for (int b = 0; b < config_.depth; ++b) {
    s.plan_.push_back({Kind::Attention, b, 2 * (n * 4 * hid * hid + attention)});
    s.plan_.push_back({Kind::Mlp, b, 2 * n * 2 * hid * inter});
    for (size_t k = 0; k < ds_index.size(); ++k)
      if (ds_index[k] == b) s.plan_.push_back({Kind::DeepStack, static_cast<int>(k), merger});
  }
  s.plan_.push_back({Kind::Merger, 0, merger});
  s.out_.deepstack.resize(ds_index.size());
  return s;
}

// Patch embedding over all images at once ([n, patch_dim] · Wᵀ + b), the
// position embeddings, the rotary tables and attention segments, and the
// first block's norm1.
void VisionEncoder::embed(VisionEncoding& s, ThreadPool& pool) const {
  const int64_t n = s.n_, hid = config_.hidden_size;
  const int m = config_.spatial_merge_size;
  const int64_t patch_dim = w_.patch_embed.w.cols();
  std::vector<float> pixels;
  const float* px = s.images_[0].pixels;
  if (s.images_.size() > 1) {
    pixels.reserve(n * patch_dim);
    for (const VisionInput& img : s.images_) pixels.insert(pixels.end(), img.pixels, img.pixels + img.grid.patches() * patch_dim);
    px = pixels.data();
  }
  s.x_.resize(n * hid);
  float* x = s.x_.data();
  matmul(px, n, w_.patch_embed.w, w_.patch_embed.b(), x, pool);
  if (s.trace_) s.trace_->patch_embed = s.x_;

  const int64_t half = config_.head_dim() / 2;
  s.cos_.resize(n * half);
  s.sin_.resize(n * half);
  s.segments_.assign(1, 0);
  std::vector<int32_t> rows, cols;
  rows.reserve(n);
  cols.reserve(n);
  int64_t off = 0;
  for (const VisionInput& img : s.images_) {
    const ImageGrid& g = img.grid;
    add_position_embeddings(g, x + off * hid, pool);
    for (int t = 0; t < g.t; ++t) {
      for (int by = 0; by < g.h / m; ++by)
        for (int bx = 0; bx < g.w / m; ++bx)
          for (int iy = 0; iy < m; ++iy)
            for (int ix = 0; ix < m; ++ix) {
              rows.push_back(by * m + iy);
              cols.push_back(bx * m + ix);
            }
      s.segments_.push_back(s.segments_.back() + int64_t{g.h} * g.w);
    }
    off += g.patches();
  }
  rope_.fill(rows.data(), cols.data(), n, s.cos_.data(), s.sin_.data());
  if (s.trace_) s.trace_->patch_embed_pos = s.x_;

  s.xn_.resize(n * hid);
  s.qkv_.resize(n * 3 * hid);
  s.tmp_.resize(n * hid);
  s.h1_.resize(std::min<int64_t>(n, kMlpChunk) * config_.intermediate_size);
  const float eps = static_cast<float>(config_.layer_norm_eps);
  if (config_.depth > 0) add_layer_norm(x, nullptr, w_.blocks[0].norm1, eps, s.xn_.data(), n, hid, pool);
}

void VisionEncoder::step(VisionEncoding& s, ThreadPool& pool) const {
  if (s.done()) fail("VisionEncoder::step: the encoding has no piece left (", s.plan_.size(), " done)");
  const VisionEncoding::Piece piece = s.plan_[s.next_];
  const int64_t out_hid = config_.out_hidden_size;
  switch (piece.kind) {
    case VisionEncoding::Kind::Embed:
      embed(s, pool);
      break;
    case VisionEncoding::Kind::Attention:
      attention_half(w_.blocks[piece.index], s, pool);
      break;
    case VisionEncoding::Kind::Mlp:
      mlp_half(piece.index, s, pool);
      break;
    case VisionEncoding::Kind::DeepStack: {
      std::vector<float>& out = s.out_.deepstack[piece.index];
      out.resize(s.out_.tokens * out_hid);
      merge(w_.deepstack[piece.index], true, s.x_.data(), s.n_, out.data(), pool);
      break;
    }
    case VisionEncoding::Kind::Merger:
      s.out_.embeds.resize(s.out_.tokens * out_hid);
      merge(w_.merger, false, s.x_.data(), s.n_, s.out_.embeds.data(), pool);
      break;
  }
  ++s.next_;
}

VisionFeatures VisionEncoder::finish(VisionEncoding& s) const {
  if (!s.done())
    fail("VisionEncoder::finish: the encoding is not complete (", s.next_, " of ", s.plan_.size(), " pieces run)");
  VisionFeatures f = std::move(s.out_);
  s = VisionEncoding{};
  return f;
}

VisionFeatures VisionEncoder::encode(std::span<const VisionInput> images, ThreadPool& pool, VisionTrace* trace) const {
  VisionEncoding s = begin(images, trace);
  while (!s.done()) step(s, pool);
  return finish(s);
}

double VisionEncoder::flops(std::span<const ImageGrid> grids) const {
  const double hid = config_.hidden_size, inter = config_.intermediate_size;
  const double m2 = double(config_.spatial_merge_size) * config_.spatial_merge_size;
  double total = 0;
  for (const ImageGrid& g : grids) {
    const double n = static_cast<double>(g.patches()), seg = double(g.h) * g.w;
    const double per_block = n * (3 * hid * hid + hid * hid + 2 * hid * inter) + 2 * n * seg * hid;
    total += n * w_.patch_embed.w.cols() * hid + config_.depth * per_block;
    const double mrows = n / m2, wide = hid * m2;
    total += (1 + static_cast<double>(config_.deepstack_visual_indexes.size())) * mrows * (wide * wide + wide * config_.out_hidden_size);
  }
  return 2 * total;
}

}  // namespace qvl
