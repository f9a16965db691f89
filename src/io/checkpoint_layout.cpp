#include "io/checkpoint_layout.h"

#include <algorithm>
#include <string>

namespace qvl {

namespace {

// Appends tensors under one name prefix.
struct Adder {
  std::vector<TensorInfo>& out;
  DType dtype;
  void operator()(const std::string& name, std::vector<int64_t> shape) { out.push_back({name, dtype, std::move(shape)}); }
};

void add_text(const TextConfig& t, bool tied, ExpertLayout experts, Adder& add) {
  const int64_t H = t.hidden_size, V = t.vocab_size, hd = t.head_dim;
  const int64_t q = t.num_attention_heads * hd, kv = t.num_key_value_heads * hd;
  const std::string lm = "model.language_model.";
  add(lm + "embed_tokens.weight", {V, H});
  add(lm + "norm.weight", {H});
  for (int i = 0; i < t.num_hidden_layers; ++i) {
    const std::string p = lm + "layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {H});
    add(p + "post_attention_layernorm.weight", {H});
    add(p + "self_attn.q_proj.weight", {q, H});
    add(p + "self_attn.k_proj.weight", {kv, H});
    add(p + "self_attn.v_proj.weight", {kv, H});
    add(p + "self_attn.o_proj.weight", {H, q});
    if (t.attention_bias) {
      add(p + "self_attn.q_proj.bias", {q});
      add(p + "self_attn.k_proj.bias", {kv});
      add(p + "self_attn.v_proj.bias", {kv});
      add(p + "self_attn.o_proj.bias", {H});
    }
    add(p + "self_attn.q_norm.weight", {hd});
    add(p + "self_attn.k_norm.weight", {hd});
    std::vector<TensorInfo> mlp = text_mlp_tensors(t, i, add.dtype);
    if (t.sparse_layer(i) && experts == ExpertLayout::PerExpert) {
      mlp.resize(1);  // the router
      for (int e = 0; e < t.num_experts; ++e)
        for (TensorInfo& m : moe_expert_tensors(t, e, add.dtype)) mlp.push_back(std::move(m));
    }
    for (TensorInfo& m : mlp) add(p + m.name, std::move(m.shape));
  }
  if (!tied) add("lm_head.weight", {V, H});
}

// A patch merger: LayerNorm (over one patch, or over the merged window for the
// DeepStack mergers), then Linear(M, M), GELU, Linear(M, out).
void add_merger(const VisionConfig& v, const std::string& p, bool postshuffle_norm, Adder& add) {
  const int64_t M = int64_t{v.hidden_size} * v.spatial_merge_size * v.spatial_merge_size;
  const int64_t norm = postshuffle_norm ? M : v.hidden_size;
  add(p + "norm.weight", {norm});
  add(p + "norm.bias", {norm});
  add(p + "linear_fc1.weight", {M, M});
  add(p + "linear_fc1.bias", {M});
  add(p + "linear_fc2.weight", {v.out_hidden_size, M});
  add(p + "linear_fc2.bias", {v.out_hidden_size});
}

void add_vision(const VisionConfig& v, Adder& add) {
  const int64_t D = v.hidden_size, I = v.intermediate_size;
  const std::string vp = "model.visual.";
  add(vp + "patch_embed.proj.weight", {D, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size});
  add(vp + "patch_embed.proj.bias", {D});
  add(vp + "pos_embed.weight", {v.num_position_embeddings, D});
  for (int i = 0; i < v.depth; ++i) {
    const std::string p = vp + "blocks." + std::to_string(i) + ".";
    add(p + "norm1.weight", {D});
    add(p + "norm1.bias", {D});
    add(p + "norm2.weight", {D});
    add(p + "norm2.bias", {D});
    add(p + "attn.qkv.weight", {3 * D, D});
    add(p + "attn.qkv.bias", {3 * D});
    add(p + "attn.proj.weight", {D, D});
    add(p + "attn.proj.bias", {D});
    add(p + "mlp.linear_fc1.weight", {I, D});
    add(p + "mlp.linear_fc1.bias", {I});
    add(p + "mlp.linear_fc2.weight", {D, I});
    add(p + "mlp.linear_fc2.bias", {D});
  }
  add_merger(v, vp + "merger.", false, add);
  for (size_t k = 0; k < v.deepstack_visual_indexes.size(); ++k)
    add_merger(v, vp + "deepstack_merger_list." + std::to_string(k) + ".", true, add);
}

}  // namespace

std::vector<TensorInfo> text_mlp_tensors(const TextConfig& t, int layer, DType dtype) {
  const int64_t H = t.hidden_size;
  if (t.sparse_layer(layer)) {
    const int64_t E = t.num_experts, I = t.moe_intermediate_size;
    return {{"mlp.gate.weight", dtype, {E, H}},
            {"mlp.experts.gate_up_proj", dtype, {E, H, 2 * I}},
            {"mlp.experts.down_proj", dtype, {E, I, H}}};
  }
  const int64_t I = t.intermediate_size;
  return {{"mlp.gate_proj.weight", dtype, {I, H}},
          {"mlp.up_proj.weight", dtype, {I, H}},
          {"mlp.down_proj.weight", dtype, {H, I}}};
}

std::vector<TensorInfo> moe_expert_tensors(const TextConfig& t, int expert, DType dtype) {
  const int64_t H = t.hidden_size, I = t.moe_intermediate_size;
  const std::string p = "mlp.experts." + std::to_string(expert) + ".";
  return {{p + "gate_proj.weight", dtype, {I, H}}, {p + "up_proj.weight", dtype, {I, H}}, {p + "down_proj.weight", dtype, {H, I}}};
}

std::vector<TensorInfo> qwen3vl_checkpoint_tensors(const ModelConfig& config, DType dtype, ExpertLayout experts) {
  std::vector<TensorInfo> out;
  Adder add{out, dtype};
  add_text(config.text, config.tie_word_embeddings, experts, add);
  add_vision(config.vision, add);
  std::sort(out.begin(), out.end(), [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  return out;
}

}  // namespace qvl
