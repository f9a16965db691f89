#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>

#include "ops/matmul.h"
#include "ops/ops.h"
#include "util/error.h"

namespace qvl {
namespace {

void activation(const std::string& name, float* x, int64_t n) {
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast") {
    gelu_tanh(x, n);
  } else if (name == "gelu") {
    gelu_erf(x, n);
  } else {
    fail("config.json: vision_config.hidden_act '", name, "' is not supported (gelu_pytorch_tanh or gelu)");
  }
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

}  // namespace

VisionEncoder::VisionEncoder(const VisionConfig& config, const VisionWeights& weights)
    : config_(config), w_(weights), rope_(config.head_dim()) {
  side_ = static_cast<int>(std::lround(std::sqrt(static_cast<double>(config.num_position_embeddings))));
  activation(config.hidden_act, nullptr, 0);  // refuse an unknown activation at load, not mid-request
}

// fast_pos_embed_interpolate: sample the side×side table at linspace(0, side-1)
// along each axis (align-corners bilinear), then reorder rows into
// merge-window order; every temporal frame gets the same embedding.
void VisionEncoder::add_position_embeddings(const ImageGrid& g, float* x) const {
  const int64_t hid = config_.hidden_size;
  const int m = config_.spatial_merge_size;
  const std::vector<float> hs = linspace(static_cast<float>(side_ - 1), g.h);
  const std::vector<float> ws = linspace(static_cast<float>(side_ - 1), g.w);
  std::vector<float> raster(static_cast<size_t>(g.h) * g.w * hid);  // [h*w, hidden]
  for (int y = 0; y < g.h; ++y) {
    const int y0 = static_cast<int>(hs[y]), y1 = std::min(y0 + 1, side_ - 1);
    const float dy = hs[y] - static_cast<float>(y0);
    for (int xx = 0; xx < g.w; ++xx) {
      const int x0 = static_cast<int>(ws[xx]), x1 = std::min(x0 + 1, side_ - 1);
      const float dx = ws[xx] - static_cast<float>(x0);
      const float wt[4] = {(1 - dy) * (1 - dx), (1 - dy) * dx, dy * (1 - dx), dy * dx};
      const float* e[4] = {&w_.pos_embed[(int64_t{y0} * side_ + x0) * hid], &w_.pos_embed[(int64_t{y0} * side_ + x1) * hid],
                           &w_.pos_embed[(int64_t{y1} * side_ + x0) * hid], &w_.pos_embed[(int64_t{y1} * side_ + x1) * hid]};
      float* out = &raster[(int64_t{y} * g.w + xx) * hid];
      for (int64_t c = 0; c < hid; ++c) out[c] = e[0][c] * wt[0] + e[1][c] * wt[1] + e[2][c] * wt[2] + e[3][c] * wt[3];
    }
  }
  int64_t row = 0;
  for (int t = 0; t < g.t; ++t)
    for (int by = 0; by < g.h / m; ++by)
      for (int bx = 0; bx < g.w / m; ++bx)
        for (int iy = 0; iy < m; ++iy)
          for (int ix = 0; ix < m; ++ix, ++row) {
            const float* p = &raster[(int64_t{by * m + iy} * g.w + (bx * m + ix)) * hid];
            add(x + row * hid, p, x + row * hid, hid);
          }
}

// x += proj(attention(rope(q), rope(k), v)) ; x += fc2(act(fc1(LN(x)))).
void VisionEncoder::block(const VisionBlockWeights& w, float* x, int64_t n, const float* cos, const float* sin,
                          const std::vector<int64_t>& segments, Scratch& s, ThreadPool& pool) const {
  const int64_t hid = config_.hidden_size, heads = config_.num_heads, hd = config_.head_dim();
  std::vector<float>& xn = s.xn;
  std::vector<float>& qkv = s.qkv;
  std::vector<float>& tmp = s.tmp;
  layer_norm(x, w.norm1.weight.data(), w.norm1.bias.data(), xn.data(), n, hid, static_cast<float>(config_.layer_norm_eps));
  matmul(xn.data(), n, w.qkv.w, w.qkv.b(), qkv.data(), pool);  // [n, (q|k|v), heads, hd]
  rope(qkv.data(), n, heads, hd, 3 * hid, cos, sin);
  rope(qkv.data() + hid, n, heads, hd, 3 * hid, cos, sin);
  AttentionParams p;
  p.nq = p.nkv = n;
  p.q_heads = p.kv_heads = heads;
  p.head_dim = hd;
  p.q_stride = p.kv_stride = 3 * hid;
  p.out_stride = hid;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  attention_segments(qkv.data(), qkv.data() + hid, qkv.data() + 2 * hid, xn.data(), p, segments.data(),
                     static_cast<int64_t>(segments.size()) - 1, pool);
  matmul(xn.data(), n, w.proj.w, w.proj.b(), tmp.data(), pool);
  add(x, tmp.data(), x, n * hid);

  layer_norm(x, w.norm2.weight.data(), w.norm2.bias.data(), xn.data(), n, hid, static_cast<float>(config_.layer_norm_eps));
  // The MLP runs in row chunks so its [rows, intermediate] buffer stays bounded
  // for very large images.
  const int64_t inter = config_.intermediate_size, chunk = kMlpChunk;
  std::vector<float>& h1 = s.h1;
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int64_t rows = std::min(chunk, n - r0);
    matmul(xn.data() + r0 * hid, rows, w.fc1.w, w.fc1.b(), h1.data(), pool);
    activation(config_.hidden_act, h1.data(), rows * inter);
    matmul(h1.data(), rows, w.fc2.w, w.fc2.b(), tmp.data() + r0 * hid, pool);
  }
  add(x, tmp.data(), x, n * hid);
}

// Qwen3VLVisionPatchMerger: each group of merge² consecutive patch rows becomes
// one row of merge²·hidden; LayerNorm before (final merger, over hidden) or
// after (DeepStack, over merge²·hidden) the regrouping; fc1 -> exact GELU -> fc2.
void VisionEncoder::merge(const MergerWeights& w, bool postshuffle_norm, const float* x, int64_t n, float* out,
                          ThreadPool& pool) const {
  const int64_t hid = config_.hidden_size, m2 = int64_t{config_.spatial_merge_size} * config_.spatial_merge_size;
  const int64_t rows = n / m2, wide = hid * m2;
  std::vector<float> xn(n * hid), h1(rows * wide);
  if (postshuffle_norm) {
    layer_norm(x, w.norm.weight.data(), w.norm.bias.data(), xn.data(), rows, wide, 1e-6f);
  } else {
    layer_norm(x, w.norm.weight.data(), w.norm.bias.data(), xn.data(), n, hid, 1e-6f);
  }
  matmul(xn.data(), rows, w.fc1.w, w.fc1.b(), h1.data(), pool);
  gelu_erf(h1.data(), rows * wide);
  matmul(h1.data(), rows, w.fc2.w, w.fc2.b(), out, pool);
}

VisionFeatures VisionEncoder::encode(std::span<const VisionInput> images, ThreadPool& pool, VisionTrace* trace) const {
  const int64_t hid = config_.hidden_size, out_hid = config_.out_hidden_size;
  const int m = config_.spatial_merge_size;
  const int64_t patch_dim = w_.patch_embed.w.cols();
  VisionFeatures f;
  int64_t n = 0;
  for (const VisionInput& img : images) {
    const ImageGrid& g = img.grid;
    if (g.t < 1 || g.h < m || g.w < m || g.h % m || g.w % m)
      fail("image grid ", g.t, "x", g.h, "x", g.w, " is not a positive multiple of the merge size ", m);
    n += g.patches();
    f.image_tokens.push_back(g.tokens(m));
    f.tokens += g.tokens(m);
  }
  if (n == 0) return f;

  // Patch embedding over all images at once: [n, patch_dim] · Wᵀ + b.
  std::vector<float> pixels;
  const float* px = images[0].pixels;
  if (images.size() > 1) {
    pixels.reserve(n * patch_dim);
    for (const VisionInput& img : images) pixels.insert(pixels.end(), img.pixels, img.pixels + img.grid.patches() * patch_dim);
    px = pixels.data();
  }
  std::vector<float> x(n * hid);
  matmul(px, n, w_.patch_embed.w, w_.patch_embed.b(), x.data(), pool);
  if (trace) trace->patch_embed = x;

  // Position embeddings, rotary tables and attention segments (one per frame:
  // cu_seqlens in transformers).
  const int64_t half = config_.head_dim() / 2;
  std::vector<float> cos(n * half), sin(n * half);
  std::vector<int64_t> segments{0};
  {
    std::vector<int32_t> rows, cols;
    rows.reserve(n);
    cols.reserve(n);
    int64_t off = 0;
    for (const VisionInput& img : images) {
      const ImageGrid& g = img.grid;
      add_position_embeddings(g, x.data() + off * hid);
      for (int t = 0; t < g.t; ++t) {
        for (int by = 0; by < g.h / m; ++by)
          for (int bx = 0; bx < g.w / m; ++bx)
            for (int iy = 0; iy < m; ++iy)
              for (int ix = 0; ix < m; ++ix) {
                rows.push_back(by * m + iy);
                cols.push_back(bx * m + ix);
              }
        segments.push_back(segments.back() + int64_t{g.h} * g.w);
      }
      off += g.patches();
    }
    rope_.fill(rows.data(), cols.data(), n, cos.data(), sin.data());
  }
  if (trace) trace->patch_embed_pos = x;

  Scratch scratch;
  scratch.xn.resize(n * hid);
  scratch.qkv.resize(n * 3 * hid);
  scratch.tmp.resize(n * hid);
  scratch.h1.resize(std::min<int64_t>(n, kMlpChunk) * config_.intermediate_size);
  const std::vector<int>& ds_index = config_.deepstack_visual_indexes;
  f.deepstack.resize(ds_index.size());
  for (int b = 0; b < config_.depth; ++b) {
    block(w_.blocks[b], x.data(), n, cos.data(), sin.data(), segments, scratch, pool);
    if (trace) trace->blocks.push_back(x);
    for (size_t k = 0; k < ds_index.size(); ++k) {
      if (ds_index[k] != b) continue;
      f.deepstack[k].resize(f.tokens * out_hid);
      merge(w_.deepstack[k], true, x.data(), n, f.deepstack[k].data(), pool);
    }
  }
  f.embeds.resize(f.tokens * out_hid);
  merge(w_.merger, false, x.data(), n, f.embeds.data(), pool);
  return f;
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
