// The Qwen3 text decoder of Qwen3-VL: RMSNorm, q/k/v projections with per-head
// q/k RMSNorm before interleaved M-RoPE, grouped-query attention over the KV
// cache, o_proj, SwiGLU MLP (dense, or a mixture of experts: text_mlp.h);
// DeepStack features added at the image positions after the first layers;
// final RMSNorm and lm_head.
//
// A decoder owns its scratch buffers, grown to the largest chunk seen (at most
// `max_batch` tokens): a forward over more tokens runs in chunks, and a decode
// step after the first allocates nothing.
// A call serves one sequence (forward) or one new token of each of several
// sequences (forward_batch), never two calls at once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "io/model_config.h"
#include "model/decode_profile.h"
#include "model/kv_cache.h"
#include "model/positions.h"
#include "model/rope_tables.h"
#include "model/text_mlp.h"
#include "model/vision_encoder.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "ops/thread_pool.h"

namespace qvl {

struct TextInput {
  const int32_t* ids = nullptr;  // [n]
  const Pos3* pos = nullptr;     // [n] M-RoPE positions
  int64_t n = 0;
  // Image tokens: token i with vis_row[i] >= 0 takes vision->embeds row
  // vis_row[i] as its input embedding, and vision->deepstack[k] row vis_row[i]
  // is added to its hidden state after layer k. nullptr: text only.
  const int64_t* vis_row = nullptr;
  const VisionFeatures* vision = nullptr;
  // A piece of a prompt (the engine's prefill), not tokens decoded alone:
  // attention takes the many-query kernel at any n (AttentionParams::prompt)
  // and the projections the GEMM's arithmetic (MatmulRows::Prompt), so the
  // prompt's bits do not depend on where it was cut.
  bool prompt = false;
};

// Hidden states for the golden tests, rows appended chunk by chunk: [n, hidden].
struct TextTrace {
  std::vector<float> inputs_embeds, final_norm;
  std::vector<std::vector<float>> layer_out;    // output of layer i before the DeepStack addition
  std::vector<std::vector<float>> after_layer;  // after it (the input of layer i+1)
  std::vector<RouterTrace> router;              // per layer; empty for a dense layer
};

// Multiply-adds ×2 per token of the layers' projections and MLP (attention
// scores and lm_head not included): a prefill's work, for throughput figures
// and scheduling.
double text_matmul_flops_per_token(const TextConfig& c);

class TextDecoder {
 public:
  TextDecoder(const TextConfig& config, const TextWeights& weights, int64_t max_batch);

  // Appends the n tokens to `cache` (at cache.size()) and leaves the final-
  // normed hidden state of the last token in last_hidden(). With `all_hidden`
  // [n, hidden] every row's final-normed state is written there too.
  void forward(const TextInput& in, KvCache& cache, ThreadPool& pool, float* all_hidden = nullptr,
               TextTrace* trace = nullptr);
  const float* last_hidden() const { return last_.data(); }

  // One decode step of B sequences at once: token ids[i] at position pos[i]
  // is appended to caches[i] (B distinct caches), and its final-normed hidden
  // state written to hidden [B, hidden]. Every matmul runs with M = B rows,
  // so the weights are read once for all; attention and RoPE stay per
  // sequence. Each row equals what forward() gives for that token alone,
  // bit for bit, whenever the matmul kernel's rows do not depend on M.
  void forward_batch(std::span<const int32_t> ids, std::span<const Pos3> pos, std::span<KvCache* const> caches,
                     ThreadPool& pool, float* hidden);
  // The same with a piece of counts[i] consecutive tokens for caches[i]
  // (jump-forward: a token and those the grammar forces after it), causal
  // within the piece: ids, pos and hidden have sum(counts) rows. Each row
  // equals that token decoded alone, bit for bit, while the rows are no more
  // than exact_rows() and each piece is no longer than kAttentionRowQueries.
  void forward_pieces(std::span<const int32_t> ids, std::span<const Pos3> pos, std::span<KvCache* const> caches,
                      std::span<const int64_t> counts, ThreadPool& pool, float* hidden);
  // Several whole prompts in one forward (the batches of the retrieval
  // models, engine/retrieval.h): prompt i's counts[i] rows follow prompt
  // i-1's in `in` (in.vis_row indexes one VisionFeatures for all of them),
  // are appended to caches[i] and attend to that cache only. hidden [rows,
  // hidden] receives every row's final-normed state. With in.prompt each
  // prompt's rows are the bits forward() gives it alone, however they are
  // packed.
  void forward_prompts(const TextInput& in, std::span<KvCache* const> caches, std::span<const int64_t> counts,
                       ThreadPool& pool, float* hidden);
  // The most rows a batched forward (and logits()) may carry with every row
  // bit-identical to its token decoded alone: the matmuls' bound for the
  // weights' formats (matmul_row_exact_rows).
  int64_t exact_rows() const;
  // The longest piece of one sequence whose rows keep those bits (attention's
  // rows kernel, kAttentionRowQueries).
  int64_t exact_piece() const;

  // logits [rows, vocab] = hidden [rows, hidden] · lm_headᵀ.
  void logits(const float* hidden, int64_t rows, float* out, ThreadPool& pool) const;

  KvCache make_cache(int64_t capacity, KvType type = KvType::F32) const;
  // Decode forwards (not prompt pieces) add their matmul and attention time
  // to *profile from now on; null: off (the default).
  void set_profile(DecodeProfile* profile) { profile_ = profile; }
  int64_t max_batch() const { return max_batch_; }
  const TextConfig& config() const { return config_; }

 private:
  // Rows [row, row + n) of a chunk belong to one sequence and are appended to
  // its cache at position p0 = cache->size() (taken when the chunk starts).
  struct Segment {
    KvCache* cache;
    int64_t row, n, p0;
  };
  void check_room(const KvCache& cache, int64_t n) const;
  // forward_pieces and forward_prompts once checked: counts[i] rows (1 when
  // counts is empty) for caches[i], in chunks of max_batch rows.
  void forward_segments(const TextInput& in, std::span<KvCache* const> caches, std::span<const int64_t> counts,
                        ThreadPool& pool, float* hidden);
  void ensure_rows(int64_t n);
  void forward_chunk(const TextInput& in, int64_t begin, int64_t n, std::span<const Segment> segs, ThreadPool& pool,
                     float* all_hidden, TextTrace* trace);
  void embed(const TextInput& in, int64_t begin, int64_t n);
  // prompt: TextInput::prompt of the chunk.
  void attention_block(const TextLayerWeights& w, int layer, int64_t n, std::span<const Segment> segs, bool prompt,
                       ThreadPool& pool);
  void mlp_block(const TextLayerWeights& layer, int64_t n, bool prompt, ThreadPool& pool, RouterTrace* trace);

  const TextConfig& config_;
  const TextWeights& w_;
  TextRope rope_;
  MoeMlp moe_;  // the sparse layers' forward and scratch
  int64_t max_batch_;
  int64_t q_dim_, kv_dim_;
  static constexpr int64_t kKeepRows = 64;
  int64_t rows_ = 0;  // rows the scratch holds
  // Scratch, [rows_, …]:
  std::vector<float> x_;     // [B, hidden] residual stream
  std::vector<float> xn_;    // [B, hidden] normed input of a sub-block
  std::vector<float> q_;     // [B, heads*head_dim] queries, then the attention output (in place)
  std::vector<float> gate_;  // [B, intermediate] (dense layers)
  std::vector<float> up_;    // [B, intermediate] (dense layers)
  std::vector<float> cos_, sin_;  // [B, head_dim/2]
  std::vector<float> k_, v_;  // [B, kv_heads*head_dim] new K/V of several sequences before they go to their caches
  std::vector<float> last_;  // [hidden]
  std::vector<Segment> segs_;  // [B] forward_batch's rows, one per sequence
  std::vector<AttentionJob> attention_jobs_;  // [B] a layer's attention, one job per sequence
  DecodeProfile* profile_ = nullptr;
  // Where a decode chunk's matmul / attention time goes; null for prompt
  // pieces and when profiling is off.
  double* matmul_clock(bool prompt) const { return profile_ && !prompt ? &profile_->matmul_ms : nullptr; }
  double* attention_clock(bool prompt) const { return profile_ && !prompt ? &profile_->attention_ms : nullptr; }
};

}  // namespace qvl
