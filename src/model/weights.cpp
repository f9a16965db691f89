#include "model/weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <set>

#include "io/checkpoint_layout.h"
#include "model/fp8_weights.h"
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
  Binder(const SafeTensors& st, const ModelConfig& config, const WeightLoadOptions& options)
      : st_(st), options_(options), fp8_(config.fp8 ? &*config.fp8 : nullptr) {
    // Qwen3-VL checkpoints as published use "model.visual." / "model.language_model.";
    // some re-exports drop the "model." of the vision tower and call the text
    // model "model.".
    if (!st.find("model.visual.patch_embed.proj.weight") && st.find("visual.patch_embed.proj.weight")) {
      vision_prefix_ = "visual.";
      if (!st.find("model.language_model.norm.weight") && st.find("model.norm.weight")) text_prefix_ = "model.";
    }
    for (const auto& [name, view] : st.tensors()) {
      if (view.dtype == DType::BF16 || view.dtype == DType::F32 || view.dtype == DType::F8_E4M3)
        total_bytes_ += view.nbytes;
    }
  }

  const std::string& vision_prefix() const { return vision_prefix_; }
  const std::string& text_prefix() const { return text_prefix_; }

  // `matrix`: a linear's weight, which an FP8 checkpoint may store as
  // F8_E4M3 with block scales (convert() dequantizes it).
  const TensorView* tensor(const std::string& name, std::vector<int64_t> shape, bool matrix = false) {
    const TensorView* t = st_.find(name);
    if (!t) {
      missing_.push_back(name);
      return nullptr;
    }
    used_.insert(name);
    if (t->shape != shape)
      fail("tensor ", name, " in ", t->file ? *t->file : "checkpoint", " has shape ", shape_str(t->shape),
           ", config.json implies ", shape_str(shape));
    const bool fp8 = t->dtype == DType::F8_E4M3;
    if (fp8 && !matrix)
      fail("tensor ", name, " in ", *t->file, " is F8_E4M3; FP8 checkpoints quantize only linear weights, ",
           "and qvl reads this one as BF16 or F32");
    if (t->dtype != DType::BF16 && t->dtype != DType::F32 && !fp8)
      fail("tensor ", name, " in ", *t->file, " has dtype ", dtype_name(t->dtype),
           "; qvl reads BF16 and F32 checkpoints, and F8_E4M3 linear weights with block scales");
    // Per tensor, as transformers decides: an F8_E4M3 weight has a
    // _scale_inv sibling and is dequantized; any other is read as stored.
    if (const TensorView* scale = st_.find(fp8_scale_name(name))) {
      if (!fp8)
        fail("tensor ", name, " in ", *t->file, " is ", dtype_name(t->dtype), " but has an FP8 block scale ",
             scale->name, "; a scaled weight must be F8_E4M3");
      used_.insert(scale->name);
    }
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
    const TensorView* t = tensor(name, {rows, cols}, true);
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

  // `format` defaults to the one asked for; the router asks for an exact one.
  WeightMatrix convert(const TensorView& t, int64_t rows, int64_t cols) {
    return convert(t, rows, cols, options_.format);
  }
  WeightMatrix convert(const TensorView& t, int64_t rows, int64_t cols, WeightFormat format) {
    if (std::optional<WeightMatrix> m = reused(t.name, rows, cols, format)) {
      done_bytes_ += t.nbytes;
      return *m;
    }
    if (t.dtype == DType::F8_E4M3) return dequantized(t, rows, cols, format);
    WeightMatrix m;
    const bool aligned_bf16 = reinterpret_cast<uintptr_t>(t.data) % alignof(uint16_t) == 0;
    const bool aligned_f32 = reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0;
    if (t.dtype == DType::BF16 && format == WeightFormat::BF16 && aligned_bf16) {
      m = WeightMatrix::view_bf16(reinterpret_cast<const uint16_t*>(t.data), rows, cols);
    } else if (t.dtype == DType::F32 && format == WeightFormat::F32 && aligned_f32) {
      m = WeightMatrix::view_f32(reinterpret_cast<const float*>(t.data), rows, cols);
    } else if (t.dtype == DType::BF16 && aligned_bf16) {
      // Source pages are dropped as rows are converted, so a large tensor (the
      // 600 MB embedding behind a tied lm_head) never sits in memory whole
      // beside its converted copy.
      const size_t row_bytes = static_cast<size_t>(cols) * 2;
      m = WeightMatrix::from_bf16(
          reinterpret_cast<const uint16_t*>(t.data), rows, cols, format, options_.pool,
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
      m = WeightMatrix::from_bf16(bf16.data(), rows, cols, format, options_.pool, {}, &arena_);
      converted_ = true;
    }
    set_precision(m);
    record(t.name, m);
    done_bytes_ += t.nbytes;
    if (converted_ && options_.progress) options_.progress(done_bytes_, total_bytes_);
    return m;
  }

  // The matrix `name` from options_.reuse when it holds one of this format
  // and shape (its precision set as a converted one's would be).
  std::optional<WeightMatrix> reused(const std::string& name, int64_t rows, int64_t cols, WeightFormat format) const {
    if (!options_.reuse) return std::nullopt;
    auto it = options_.reuse->find(name);
    if (it == options_.reuse->end()) return std::nullopt;
    WeightMatrix m = it->second;
    if (m.format() != format || m.rows() != rows || m.cols() != cols) return std::nullopt;
    set_precision(m);
    return m;
  }

  // The precision matmul() (bf16) and attention_precision (bf16, q8, q4)
  // read: as asked, else Fast for q8/q4 and Exact for bf16. f32 stays Exact.
  void set_precision(WeightMatrix& m) const {
    if (m.format() == WeightFormat::F32) return;
    const bool quantized = m.format() == WeightFormat::Q8 || m.format() == WeightFormat::Q4;
    m.set_precision(options_.precision.value_or(quantized ? MatmulPrecision::Fast : MatmulPrecision::Exact));
  }

  // Hands a q8/q4 matrix this load converted to options_.converted.
  void record(const std::string& name, const WeightMatrix& m) {
    if (options_.converted && (m.format() == WeightFormat::Q8 || m.format() == WeightFormat::Q4))
      options_.converted->emplace(name, m);
  }

  // An F8_E4M3 weight and its block scales (model/fp8_weights.h) -> f32,
  // then `format`: kept as f32, rounded to bf16, or quantized to q8/q4 from
  // the exact f32 values.
  WeightMatrix dequantized(const TensorView& t, int64_t rows, int64_t cols, WeightFormat format) {
    if (!fp8_)
      fail("tensor ", t.name, " in ", *t.file, " is F8_E4M3 but config.json has no quantization_config ",
           "(quant_method \"fp8\") to say how it is scaled");
    const TensorView* scale = st_.find(fp8_scale_name(t.name));
    if (!scale)
      fail("tensor ", t.name, " in ", *t.file, " is F8_E4M3 but the checkpoint has no ", fp8_scale_name(t.name),
           " (its 128×128 block scales)");
    const size_t n = static_cast<size_t>(rows * cols);
    WeightMatrix m;
    if (format == WeightFormat::F32) {
      std::shared_ptr<void> buf = arena_.allocate(n * 4, "a dequantized FP8 weight matrix");
      dequantize_fp8(t, *scale, *fp8_, rows, cols, static_cast<float*>(buf.get()), options_.pool);
      owned_.push_back(buf);
      m = WeightMatrix::view_f32(static_cast<const float*>(buf.get()), rows, cols);
    } else {
      // One scratch for every matrix (the largest decides its size): a
      // fresh 50 MB buffer per 2B matrix cost more page faults than the
      // dequantization itself.
      if (fp8_scratch_.size() < n) fp8_scratch_.resize(n);
      dequantize_fp8(t, *scale, *fp8_, rows, cols, fp8_scratch_.data(), options_.pool);
      m = WeightMatrix::from_f32(fp8_scratch_.data(), rows, cols, format, options_.pool, &arena_);
      set_precision(m);
    }
    release_pages(t.data, t.nbytes);
    release_pages(scale->data, scale->nbytes);
    converted_ = true;
    done_bytes_ += t.nbytes;
    if (options_.progress) options_.progress(done_bytes_, total_bytes_);
    record(t.name, m);
    return m;
  }

  // A sparse layer's router and experts. The checkpoint fuses the experts
  // as x·W tensors, gate_up_proj [E, H, 2I] (each row: I gate then I up
  // weights) and down_proj [E, I, H], while WeightMatrix multiplies by Wᵀ
  // with W [n, k] row-major, k the summed axis contiguous. Neither can be
  // read in place: an expert's gate is the transpose of a strided half of
  // its block, its down the transpose of its block. So each expert is
  // transposed once at load into its own matrix (bf16 and f32 copied, q8/q4
  // quantized from the transposed copy), and its source pages dropped.
  MoeMlpWeights experts(const std::string& prefix, const std::vector<TensorInfo>& table, const TextConfig& tc) {
    MoeMlpWeights m;
    const int64_t E = tc.num_experts, H = tc.hidden_size, I = tc.moe_intermediate_size;
    // The router decides which experts run: it stays exact (bf16 as
    // published, or f32), never quantized; it is E·H weights.
    const WeightFormat exact = options_.format == WeightFormat::F32 ? WeightFormat::F32 : WeightFormat::BF16;
    if (const TensorView* r = tensor(prefix + table[0].name, table[0].shape, true)) {
      // An FP8 router (none is published) dequantizes exactly into f32.
      m.router = convert(*r, E, H, r->dtype == DType::F8_E4M3 ? WeightFormat::F32 : exact);
      m.router.set_precision(MatmulPrecision::Exact);
    }
    // Qwen's FP8 releases of MoE models store the experts one by one as
    // nn.Linear weights (gate_proj, up_proj [I, H], down_proj [H, I], each
    // with its block scales): matrices as they are, no transpose.
    if (!has(prefix + table[1].name) && has(prefix + moe_expert_tensors(tc, 0)[0].name)) {
      for (int64_t e = 0; e < E; ++e) {
        const std::vector<TensorInfo> ex = moe_expert_tensors(tc, static_cast<int>(e));
        m.gate.push_back(matrix(prefix + ex[0].name, ex[0].shape[0], ex[0].shape[1]));
        m.up.push_back(matrix(prefix + ex[1].name, ex[1].shape[0], ex[1].shape[1]));
        m.down.push_back(matrix(prefix + ex[2].name, ex[2].shape[0], ex[2].shape[1]));
      }
      return m;
    }
    const TensorView* gate_up = tensor(prefix + table[1].name, table[1].shape);
    const TensorView* down = tensor(prefix + table[2].name, table[2].shape);
    if (!gate_up || !down) return m;
    for (int64_t e = 0; e < E; ++e) {
      m.gate.push_back(transposed(*gate_up, e, H, 2 * I, 0, I));
      m.up.push_back(transposed(*gate_up, e, H, 2 * I, I, I));
      m.down.push_back(transposed(*down, e, I, H, 0, H));
      const size_t esize = dtype_size(gate_up->dtype);
      release_pages(gate_up->data + e * H * 2 * I * esize, H * 2 * I * esize);
      release_pages(down->data + e * I * H * esize, I * H * esize);
    }
    done_bytes_ += gate_up->nbytes + down->nbytes;
    if (options_.progress) options_.progress(done_bytes_, total_bytes_);
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

  // Columns [c0, c0 + n) of expert e's [r, c] block of a 3-D tensor
  // [E, r, c], transposed: the [n, r] matrix y = x·Wᵀ reads.
  WeightMatrix transposed(const TensorView& t, int64_t e, int64_t r, int64_t c, int64_t c0, int64_t n) {
    const std::string name = cat(t.name, "#", e, ":", c0);
    if (std::optional<WeightMatrix> m = reused(name, n, r, options_.format)) return *m;
    const size_t esize = dtype_size(t.dtype);
    const uint8_t* block = t.data + static_cast<size_t>(e * r * c) * esize;
    // Element (i, j) of the result is block[j][c0 + i]; memcpy since the
    // mapping may be unaligned.
    auto transpose = [&](auto* dst) {
      auto rows = [&](int64_t b, int64_t end, int) {
        for (int64_t i = b; i < end; ++i)
          for (int64_t j = 0; j < r; ++j) std::memcpy(&dst[i * r + j], block + (j * c + c0 + i) * esize, esize);
      };
      if (options_.pool)
        options_.pool->parallel_for(n, rows);
      else
        rows(0, n, 0);
    };
    if (t.dtype == DType::F32 && options_.format == WeightFormat::F32) {
      std::shared_ptr<void> buf = arena_.allocate(static_cast<size_t>(n * r) * 4, "an f32 expert matrix");
      transpose(static_cast<float*>(buf.get()));
      owned_.push_back(buf);
      return WeightMatrix::view_f32(static_cast<const float*>(buf.get()), n, r);
    }
    std::vector<uint16_t> bf16(static_cast<size_t>(n * r));
    if (t.dtype == DType::BF16) {
      transpose(bf16.data());
    } else {
      // bf16 is the converters' source format, as in convert().
      std::vector<float> f32(bf16.size());
      transpose(f32.data());
      for (size_t i = 0; i < f32.size(); ++i) bf16[i] = f32_to_bf16(f32[i]);
    }
    WeightMatrix m = WeightMatrix::from_bf16(bf16.data(), n, r, options_.format, options_.pool, {}, &arena_);
    set_precision(m);
    record(name, m);
    converted_ = true;
    return m;
  }

  std::vector<std::shared_ptr<void>> take_owned() { return std::move(owned_); }

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
  const Fp8Quantization* fp8_;  // config.json's quantization_config, or null
  std::vector<float> fp8_scratch_;  // an FP8 matrix dequantized, before its conversion
  std::string vision_prefix_ = "model.visual.";
  std::string text_prefix_ = "model.language_model.";
  std::vector<std::string> missing_;
  std::vector<std::shared_ptr<void>> owned_;  // f32 expert matrices (transposed), dequantized f32 FP8 ones
  std::set<std::string> used_;
  size_t total_bytes_ = 0, done_bytes_ = 0;
  bool converted_ = false;
};

}  // namespace

std::vector<const WeightMatrix*> TextMlpWeights::matrices() const {
  if (!sparse) return {&gate.w, &up.w, &down.w};
  std::vector<const WeightMatrix*> out{&moe.router};
  for (size_t e = 0; e < moe.gate.size(); ++e) out.insert(out.end(), {&moe.gate[e], &moe.up[e], &moe.down[e]});
  return out;
}

size_t TextMlpWeights::token_bytes(int experts_per_token) const {
  if (!sparse) return gate.w.bytes() + up.w.bytes() + down.w.bytes();
  if (moe.gate.empty()) return moe.router.bytes();
  return moe.router.bytes() +
         static_cast<size_t>(experts_per_token) * (moe.gate[0].bytes() + moe.up[0].bytes() + moe.down[0].bytes());
}

std::vector<const WeightMatrix*> TextLayerWeights::matrices() const {
  std::vector<const WeightMatrix*> out;
  for (const Linear* l : attention_linears()) out.push_back(&l->w);
  for (const WeightMatrix* m : mlp.matrices()) out.push_back(m);
  return out;
}

// The config's own values were checked when config.json was read
// (io/model_config.cpp); here every tensor's shape is checked against them.
ModelWeights ModelWeights::load(const SafeTensors& st, const ModelConfig& config, const WeightLoadOptions& options) {
  ModelWeights mw;
  Binder b(st, config, options);
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
    // The MLP's tensors by the one table of their names (io/checkpoint_layout.h).
    const std::vector<TensorInfo> mlp = text_mlp_tensors(tc, i);
    l.mlp.sparse = tc.sparse_layer(i);
    if (l.mlp.sparse) {
      l.mlp.moe = b.experts(p, mlp, tc);
    } else {
      l.mlp.gate.w = b.matrix(p + mlp[0].name, mlp[0].shape[0], mlp[0].shape[1]);
      l.mlp.up.w = b.matrix(p + mlp[1].name, mlp[1].shape[0], mlp[1].shape[1]);
      l.mlp.down.w = b.matrix(p + mlp[2].name, mlp[2].shape[0], mlp[2].shape[1]);
    }
    t.layers.push_back(std::move(l));
  }
  t.norm = b.vec(tp + "norm.weight", {th});
  // A tied checkpoint may still carry a copy of lm_head.weight; reading it is
  // equivalent and keeps the tied case a plain view of the embedding table.
  // An untied checkpoint without one (Qwen3-VL-Embedding-8B: an embedding
  // model never reads the head) loads headless: lm_head stays empty, and the
  // engine refuses to generate with it (TextWeights::has_head).
  if (b.has("lm_head.weight")) {
    t.lm_head = b.matrix("lm_head.weight", tc.vocab_size, th);
  } else if (config.tie_word_embeddings) {
    if (const TensorView* e = st.find(tp + "embed_tokens.weight")) t.lm_head = b.convert(*e, tc.vocab_size, th);
  }
  b.finish(mw.unused);
  mw.owned = b.take_owned();

  auto add = [](size_t& acc, const WeightMatrix& m) { acc += m.bytes(); };
  size_t text_bytes = 0, token_bytes = 0;
  for (const TextLayerWeights& l : t.layers) {
    for (const WeightMatrix* m : l.matrices()) add(text_bytes, *m);
    for (const Linear* lin : l.attention_linears()) add(token_bytes, lin->w);
    token_bytes += l.mlp.token_bytes(tc.num_experts_per_tok);
  }
  add(text_bytes, t.lm_head);
  add(token_bytes, t.lm_head);
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
  mw.decode_bytes = token_bytes + static_cast<size_t>(th) * (t.embed.bf16 ? 2 : 4);
  return mw;
}

}  // namespace qvl
