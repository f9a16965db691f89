#include "model/weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "ops/ops.h"
#include "util/error.h"
#include "util/huge_pages.h"

namespace qvl {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// After a tensor has been converted its source pages in the mapping are no
// longer needed: drop them from this process (they stay in the page cache), so
// a q8/q4 model does not keep the bf16 checkpoint resident too.
void release_pages(const uint8_t* data, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// Looks tensors up by name, checks shapes, records what was used and what is
// missing (all missing names are reported together at the end).
class Binder {
 public:
  Binder(const SafeTensors& st, const WeightLoadOptions& options) : st_(st), options_(options) {
    // Qwen3-VL checkpoints as published use "model.visual." / "model.language_model.";
    // some re-exports drop the "model." of the vision tower and call the text
    // model "model.".
    if (!st.find("model.visual.patch_embed.proj.weight") && st.find("visual.patch_embed.proj.weight")) {
      vision_prefix_ = "visual.";
      if (!st.find("model.language_model.norm.weight") && st.find("model.norm.weight")) text_prefix_ = "model.";
    }
    for (const auto& [name, view] : st.tensors()) {
      if (view.dtype == DType::BF16 || view.dtype == DType::F32) total_bytes_ += view.nbytes;
    }
  }

  const std::string& vision_prefix() const { return vision_prefix_; }
  const std::string& text_prefix() const { return text_prefix_; }

  const TensorView* tensor(const std::string& name, std::vector<int64_t> shape) {
    const TensorView* t = st_.find(name);
    if (!t) {
      missing_.push_back(name);
      return nullptr;
    }
    used_.insert(name);
    if (t->shape != shape)
      fail("tensor ", name, " in ", t->file ? *t->file : "checkpoint", " has shape ", shape_str(t->shape),
           ", config.json implies ", shape_str(shape));
    if (t->dtype != DType::BF16 && t->dtype != DType::F32)
      fail("tensor ", name, " has dtype ", dtype_name(t->dtype), "; qvl reads BF16 and F32 checkpoints");
    return t;
  }

  bool has(const std::string& name) const { return st_.find(name) != nullptr; }

  std::vector<float> vec(const std::string& name, std::vector<int64_t> shape) {
    const TensorView* t = tensor(name, std::move(shape));
    if (!t) return {};
    std::vector<float> out(t->numel());
    if (t->dtype == DType::F32) {
      std::memcpy(out.data(), t->data, out.size() * 4);
    } else {
      std::vector<uint16_t> tmp(out.size());
      std::memcpy(tmp.data(), t->data, tmp.size() * 2);  // the mapping may be unaligned
      bf16_to_f32(tmp.data(), out.data(), static_cast<int64_t>(out.size()));
    }
    release_pages(static_cast<const uint8_t*>(t->data), t->nbytes);
    return out;
  }

  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) {
    const TensorView* t = tensor(name, {rows, cols});
    if (!t) return {};
    return convert(*t, rows, cols);
  }

  // A tensor of any rank seen as [rows, cols] (the Conv3d patch embedding).
  WeightMatrix matrix_reshaped(const std::string& name, std::vector<int64_t> shape, int64_t rows, int64_t cols) {
    const TensorView* t = tensor(name, std::move(shape));
    if (!t) return {};
    return convert(*t, rows, cols);
  }

  Linear linear(const std::string& prefix, int64_t out, int64_t in, bool bias) {
    Linear l;
    l.w = matrix(prefix + ".weight", out, in);
    if (bias) l.bias = vec(prefix + ".bias", {out});
    return l;
  }

  NormWeights norm(const std::string& prefix, int64_t dim, bool bias) {
    NormWeights n;
    n.weight = vec(prefix + ".weight", {dim});
    if (bias) n.bias = vec(prefix + ".bias", {dim});
    return n;
  }

  WeightMatrix convert(const TensorView& t, int64_t rows, int64_t cols) {
    WeightMatrix m;
    const bool aligned_bf16 = reinterpret_cast<uintptr_t>(t.data) % alignof(uint16_t) == 0;
    const bool aligned_f32 = reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0;
    if (t.dtype == DType::BF16 && options_.format == WeightFormat::BF16 && aligned_bf16) {
      m = WeightMatrix::view_bf16(reinterpret_cast<const uint16_t*>(t.data), rows, cols);
    } else if (t.dtype == DType::F32 && options_.format == WeightFormat::F32 && aligned_f32) {
      m = WeightMatrix::view_f32(reinterpret_cast<const float*>(t.data), rows, cols);
    } else if (t.dtype == DType::BF16 && aligned_bf16) {
      // Source pages are dropped as rows are converted, so a large tensor (the
      // 600 MB embedding behind a tied lm_head) never sits in memory whole
      // beside its converted copy.
      const size_t row_bytes = static_cast<size_t>(cols) * 2;
      m = WeightMatrix::from_bf16(
          reinterpret_cast<const uint16_t*>(t.data), rows, cols, options_.format, options_.pool,
          [&](int64_t b, int64_t e) { release_pages(t.data + b * row_bytes, (e - b) * row_bytes); }, &arena_);
      converted_ = true;
      release_pages(t.data, t.nbytes);
    } else {
      std::vector<uint16_t> bf16(static_cast<size_t>(rows * cols));
      if (t.dtype == DType::BF16) {
        std::memcpy(bf16.data(), t.data, bf16.size() * 2);  // unaligned in the file
      } else {
        // An f32 checkpoint asked for in another format: bf16 is the common
        // source format of the converters (exact for bf16-trained weights).
        for (size_t i = 0; i < bf16.size(); ++i) {
          float v;
          std::memcpy(&v, t.data + 4 * i, 4);
          bf16[i] = f32_to_bf16(v);
        }
      }
      m = WeightMatrix::from_bf16(bf16.data(), rows, cols, options_.format, options_.pool, {}, &arena_);
      converted_ = true;
    }
    if (m.format() == WeightFormat::BF16) m.set_precision(options_.precision);
    done_bytes_ += t.nbytes;
    if (converted_ && options_.progress) options_.progress(done_bytes_, total_bytes_);
    return m;
  }

  Embedding embedding(const std::string& name, int64_t vocab, int64_t dim) {
    Embedding e;
    e.vocab = vocab;
    e.dim = dim;
    const TensorView* t = tensor(name, {vocab, dim});
    if (!t) return e;
    if (t->dtype == DType::BF16) {
      if (reinterpret_cast<uintptr_t>(t->data) % 2 != 0) fail("tensor ", name, " is not 2-byte aligned in its file");
      e.bf16 = reinterpret_cast<const uint16_t*>(t->data);
    } else {
      if (reinterpret_cast<uintptr_t>(t->data) % 4 != 0) fail("tensor ", name, " is not 4-byte aligned in its file");
      e.f32 = reinterpret_cast<const float*>(t->data);
    }
    return e;
  }

  void finish(std::vector<std::string>& unused) {
    if (!missing_.empty()) {
      std::string list;
      for (size_t i = 0; i < missing_.size() && i < 8; ++i) list += (i ? ", " : "") + missing_[i];
      if (missing_.size() > 8) list += cat(" and ", missing_.size() - 8, " more");
      fail("checkpoint is missing ", missing_.size(), " tensor(s) that config.json requires: ", list);
    }
    for (const auto& [name, view] : st_.tensors())
      if (!used_.count(name)) unused.push_back(name);
  }

 private:
  const SafeTensors& st_;
  const WeightLoadOptions& options_;
  HugePageArena arena_;  // converted matrices; each keeps its chunk alive past the load
  std::string vision_prefix_ = "model.visual.";
  std::string text_prefix_ = "model.language_model.";
  std::vector<std::string> missing_;
  std::set<std::string> used_;
  size_t total_bytes_ = 0, done_bytes_ = 0;
  bool converted_ = false;
};

}  // namespace

// The config's own values were checked when config.json was read
// (io/model_config.cpp); here every tensor's shape is checked against them.
ModelWeights ModelWeights::load(const SafeTensors& st, const ModelConfig& config, const WeightLoadOptions& options) {
  ModelWeights mw;
  Binder b(st, options);
  const VisionConfig& vc = config.vision;
  const TextConfig& tc = config.text;

  const std::string vp = b.vision_prefix();
  const int64_t vh = vc.hidden_size, vi = vc.intermediate_size;
  const int64_t patch_dim = int64_t{vc.in_channels} * vc.temporal_patch_size * vc.patch_size * vc.patch_size;
  VisionWeights& v = mw.vision;
  v.patch_embed.w = b.matrix_reshaped(vp + "patch_embed.proj.weight",
                                      {vh, vc.in_channels, vc.temporal_patch_size, vc.patch_size, vc.patch_size}, vh,
                                      patch_dim);
  v.patch_embed.bias = b.vec(vp + "patch_embed.proj.bias", {vh});
  v.pos_embed = b.embedding(vp + "pos_embed.weight", vc.num_position_embeddings, vh);
  for (int i = 0; i < vc.depth; ++i) {
    const std::string p = cat(vp, "blocks.", i, ".");
    VisionBlockWeights blk;
    blk.norm1 = b.norm(p + "norm1", vh, true);
    blk.norm2 = b.norm(p + "norm2", vh, true);
    blk.qkv = b.linear(p + "attn.qkv", 3 * vh, vh, true);
    blk.proj = b.linear(p + "attn.proj", vh, vh, true);
    blk.fc1 = b.linear(p + "mlp.linear_fc1", vi, vh, true);
    blk.fc2 = b.linear(p + "mlp.linear_fc2", vh, vi, true);
    v.blocks.push_back(std::move(blk));
  }
  const int64_t merged = vh * vc.spatial_merge_size * vc.spatial_merge_size;
  auto merger = [&](const std::string& p, int64_t norm_dim) {
    MergerWeights m;
    m.norm = b.norm(p + "norm", norm_dim, true);
    m.fc1 = b.linear(p + "linear_fc1", merged, merged, true);
    m.fc2 = b.linear(p + "linear_fc2", vc.out_hidden_size, merged, true);
    return m;
  };
  v.merger = merger(vp + "merger.", vh);
  for (size_t k = 0; k < vc.deepstack_visual_indexes.size(); ++k)
    v.deepstack.push_back(merger(cat(vp, "deepstack_merger_list.", k, "."), merged));

  const std::string tp = b.text_prefix();
  const int64_t th = tc.hidden_size, hd = tc.head_dim;
  const int64_t qd = int64_t{tc.num_attention_heads} * hd, kvd = int64_t{tc.num_key_value_heads} * hd;
  TextWeights& t = mw.text;
  t.embed = b.embedding(tp + "embed_tokens.weight", tc.vocab_size, th);
  for (int i = 0; i < tc.num_hidden_layers; ++i) {
    const std::string p = cat(tp, "layers.", i, ".");
    TextLayerWeights l;
    l.input_norm = b.vec(p + "input_layernorm.weight", {th});
    l.post_norm = b.vec(p + "post_attention_layernorm.weight", {th});
    l.q_norm = b.vec(p + "self_attn.q_norm.weight", {hd});
    l.k_norm = b.vec(p + "self_attn.k_norm.weight", {hd});
    l.q = b.linear(p + "self_attn.q_proj", qd, th, tc.attention_bias);
    l.k = b.linear(p + "self_attn.k_proj", kvd, th, tc.attention_bias);
    l.v = b.linear(p + "self_attn.v_proj", kvd, th, tc.attention_bias);
    l.o = b.linear(p + "self_attn.o_proj", th, qd, tc.attention_bias);
    l.gate = b.linear(p + "mlp.gate_proj", tc.intermediate_size, th, false);
    l.up = b.linear(p + "mlp.up_proj", tc.intermediate_size, th, false);
    l.down = b.linear(p + "mlp.down_proj", th, tc.intermediate_size, false);
    t.layers.push_back(std::move(l));
  }
  t.norm = b.vec(tp + "norm.weight", {th});
  // A tied checkpoint may still carry a copy of lm_head.weight; reading it is
  // equivalent and keeps the tied case a plain view of the embedding table.
  if (!config.tie_word_embeddings || b.has("lm_head.weight")) {
    t.lm_head = b.matrix("lm_head.weight", tc.vocab_size, th);
  } else if (const TensorView* e = st.find(tp + "embed_tokens.weight")) {
    t.lm_head = b.convert(*e, tc.vocab_size, th);
  }
  b.finish(mw.unused);

  auto add = [](size_t& acc, const WeightMatrix& m) { acc += m.bytes(); };
  size_t text_bytes = 0;
  for (const TextLayerWeights& l : t.layers)
    for (const Linear* lin : l.linears()) add(text_bytes, lin->w);
  add(text_bytes, t.lm_head);
  size_t vision_bytes = 0;
  add(vision_bytes, v.patch_embed.w);
  for (const VisionBlockWeights& blk : v.blocks)
    for (const Linear* lin : {&blk.qkv, &blk.proj, &blk.fc1, &blk.fc2}) add(vision_bytes, lin->w);
  for (const MergerWeights* m : {&v.merger}) {
    add(vision_bytes, m->fc1.w);
    add(vision_bytes, m->fc2.w);
  }
  for (const MergerWeights& m : v.deepstack) {
    add(vision_bytes, m.fc1.w);
    add(vision_bytes, m.fc2.w);
  }
  mw.matrix_bytes = text_bytes + vision_bytes;
  mw.decode_bytes = text_bytes + static_cast<size_t>(th) * (t.embed.bf16 ? 2 : 4);
  return mw;
}

}  // namespace qvl
