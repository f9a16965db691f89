// y = x · Wᵀ for activations x [m, k] in f32 and a weight matrix W [n, k] in
// one of the supported formats. The only place the model multiplies matrices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "ops/thread_pool.h"
#include "util/formats.h"

namespace qvl {

class HugePageArena;  // util/huge_pages.h

// Weight formats. f32 and bf16 are exact (bf16 -> f32 widening is exact, and
// products are summed in f32 without rounding activations). q8 and q4 are
// group-wise formats of our own, quantized at load by from_bf16:
//
//   Both: groups of 32 consecutive weights along k (a row's last group is
//   zero-padded when k % 32 != 0); one f16 scale d per group, rounded up
//   from the ideal scale (so no code overflows). Storage (one 64-byte aligned
//   buffer; quant.h has the exact offsets): rows in blocks of 16 (the last
//   block zero-padded), each block group by group, a group's codes cut into
//   4-byte units stored unit by unit for the 16 rows; then all scales,
//   [block][group][16] f16. A thread reading a range of blocks reads one
//   sequential stream, and one 64-byte vector holds 4 bytes of 16 rows.
//   q8: d = f16⌈max|w| / 127⌉, code q = round(w / d) in [-127, 127], one int8
//       per weight. |w - d·q| <= d/2. 1.0625 bytes per weight.
//   q4: d = -f16⌈|e| / 8⌉·sign(e) for e the weight of largest magnitude,
//       code q = clamp(round(w / d), -8, 7), so e maps to -8 (exactly, up to
//       the f16 rounding of d) and all 16 levels are used. Stored as q + 8 in
//       a nibble; byte j of a group's 16 bytes holds element j (low nibble)
//       and element j + 16 (high nibble). |w - d·q| <= |d| (one step, the
//       clamp at +8 -> 7), else <= |d|/2. 0.5625 bytes per weight.
//   Activations: each row of x is rounded to 8 bits per group of 32 along k
//   (d_x = max|x| / 127 in f32, code = round(x / d_x) in [-127, 127]; error
//   <= d_x/2 per element), so each group is an exact integer dot product:
//   y = Σ_groups d·d_x · Σ_j q_j·qx_j, summed in f32 (AVX-512 VNNI vpdpbusd
//   where available), for every m: decode and prefill/vision (GEMM) run the
//   same integer dot products. On a CPU with AMX-INT8 the GEMM's integer
//   sums come from the tile unit (tdpbssd, amx_matmul.h), scaled and summed
//   as above, so its outputs are bit-identical too.
//   Error of y against the same product with f32 weights and exact x,
//   measured by bench/ops_report (normal weights, uniform x in [-1, 1], m=8,
//   n=2048, k=2048 and 6144): relative L2 error q8 0.65-0.67 % (weights
//   alone ~0.5 %, x rounding ~0.4 %), q4 8.5-8.7 %; worst single output
//   error / RMS of outputs: q8 2.6 %, q4 38 %.
//   Kernels (simd_matmul_quant.cpp) agree with the scalar twin (scalar.cpp)
//   to f32 rounding; tests/ops hold them together.
//
// For m <= 8 (batched decode) every output row is bit-identical to the same
// x row multiplied alone (m = 1), for every format; for q8 and q4, for every m
// (prefill and decode agree exactly). For f32 and bf16, rows of m > 8 take
// the GEMM, whose sums differ in the last bits from the small-m kernels'
// (and Fast rounds x): a prompt piece asks for the GEMM's arithmetic at any m
// (MatmulRows::Prompt), so a prompt's rows do not depend on where it was cut.
// (WeightFormat: util/formats.h.)

// Which arithmetic rows of x take when they are few (m <= 8) and the weights
// f32 or bf16 (q8/q4 rows agree for every m: both give the same bits).
//   Decode (the default): the small-m kernels, each weight row streamed once
//     for all m rows; decode is memory-bound and these are tuned for it.
//   Prompt: the GEMM's, as in a prefill of more rows, at any m: a row's bits
//     are then those of the same row in any prefill (a repeated request
//     recomputes its last prompt token alone and must get the uncached bits).
//     The GEMM fills a tile of 16 rows or more: at m = 1 it does up to 16
//     times the FMAs of the small-m kernel, for one prompt token.
// Why not one arithmetic for every m: the small-m kernels hold a dot product
// along k in lanes (4 chains of 16, so one weight row streams in sequence,
// one FMA per 16 weights); the GEMM holds x rows in lanes and sums each
// output in one chain over k in order, a broadcast weight per FMA (tests/ops:
// Matmul.GemmOutputsAreTheFmaChainInColumnOrder). Decode in the GEMM's order would
// need 16 weight rows transposed into lanes (shuffles for every weight
// vector: more work per weight byte); the GEMM in decode's order would load
// x and the weights per FMA instead of broadcasting (a slower prefill); and
// Fast rounds x to bf16 only in the GEMM, where decode keeps x exact.
enum class MatmulRows { Decode, Prompt };

// The most rows m for which that holds for `format` (MatmulRows::Decode): 8
// for f32 and bf16 (the small-m path; more rows take a GEMM whose sums may
// differ in the last bits), any m for q8 and q4. Callers that feed one sequence's tokens as
// extra rows (jump-forward) stay within it to keep the answers unchanged.
int64_t matmul_row_exact_rows(WeightFormat format);

// How prefill and vision products (m > 8 rows of x) with BF16 weights are
// computed. Exact (the default): as above, x in f32, every product exact.
// Fast (opt-in, --precision fast): x rounded to bf16 (round to nearest even,
// f32 denormals to zero) and multiplied by the bf16 weights with AVX-512 BF16
// vdpbf16ps, summed in f32 - what PyTorch bf16 and llama.cpp's BF16 type do;
// twice the multiply throughput of f32 FMA. Relative L2 error of one product
// against the exact one: 0.15 % measured (bench/ops_report "error" rows,
// m=256 n=2048 k=2048 and 6144; worst output error / RMS of outputs 0.7 %);
// tests/ops bound it at 0.3 %. Decode (m <= 8) and every other format ignore
// it and stay exact; so does a CPU without AVX512-BF16 or AMX-BF16
// (matmul_fast_bf16_supported()).
// Scalar twin: scalar::matmul_bf16_fast (scalar.h).
// With AMX-BF16 (amx_matmul.h) both precisions run on the tile unit: Fast
// with x rounded as above, Exact with x cut into three bf16 parts that sum
// to it, so products stay exact and sums f32.
// (MatmulPrecision: util/formats.h.)
// Whether this CPU runs a fast bf16 kernel (AVX512-BF16 or AMX-BF16);
// without one Fast falls back to the exact path.
bool matmul_fast_bf16_supported();

// Whether the fast kernel is faster than the exact one here, which decides
// what --precision fast runs (issue 15: choosing speed must never be slower):
// AMX-BF16 runs here (Fast does a third of Exact's tile work), or the CPU has
// AVX512-BF16 and one vdpbf16ps thread does at least 1.25x the
// flops of one FP32 FMA thread (measure_bf16_dot_vs_fma, ~0.1 s, once per
// process). Zen 4 measures ~2 and takes it; Sapphire Rapids ~0.5 (vdpbf16ps
// at half the FMA rate), where its fast kernel was 11 % slower than exact,
// so the model loads its matrices as Exact there.
bool matmul_fast_bf16_pays();

// A weight matrix [rows = n, cols = k], row-major as Hugging Face stores it.
// Views borrow memory (the mmap); converted matrices own theirs.
class WeightMatrix {
 public:
  WeightMatrix() = default;
  static WeightMatrix view_bf16(const uint16_t* data, int64_t rows, int64_t cols);
  static WeightMatrix view_f32(const float* data, int64_t rows, int64_t cols);
  // A q8/q4 matrix already in the layout from_bf16 makes (quant.h), read in
  // place (a mapped weight cache file, model/weight_cache.h): `data` is
  // 64-byte aligned and holds storage_bytes(format, rows, cols); `keep` owns
  // the memory (the mapping) for as long as any copy of the matrix lives.
  static WeightMatrix view_quantized(const void* data, int64_t rows, int64_t cols, WeightFormat format,
                                     std::shared_ptr<const void> keep);
  // Bytes a matrix of this shape and format occupies as from_bf16 lays it out
  // (q8/q4: the codes rounded up to 64 bytes, then the scales).
  static size_t storage_bytes(WeightFormat format, int64_t rows, int64_t cols);
  // Converts bf16 source weights to `format` (packing/quantizing as needed).
  // `rows_read(begin, end)`, when given, is told (from any pool thread) that
  // source rows [begin, end) will not be read again, so a loader can drop
  // their pages while a large tensor is still converting (peak memory).
  // `arena`, when given, holds the converted storage (a model's matrices
  // share 2 MB pages); otherwise a matrix of 2 MB or more gets its own.
  static WeightMatrix from_bf16(const uint16_t* data, int64_t rows, int64_t cols, WeightFormat format,
                                ThreadPool* pool = nullptr,
                                const std::function<void(int64_t, int64_t)>& rows_read = {},
                                HugePageArena* arena = nullptr);

  // The same from f32 source weights (an FP8 checkpoint dequantized at
  // load: fp8 × block scale needs up to 11 significant bits, more than bf16
  // holds): f32 copied, bf16 rounded to nearest even, q8/q4 quantized from
  // the f32 values (quant.h's specification, SIMD as from_bf16).
  static WeightMatrix from_f32(const float* data, int64_t rows, int64_t cols, WeightFormat format,
                               ThreadPool* pool = nullptr, HugePageArena* arena = nullptr);

  WeightFormat format() const { return format_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }  // storage read per full pass
  // The precision of large-m products (see MatmulPrecision); it only takes
  // effect on BF16 matrices. Views share the data, not this setting.
  MatmulPrecision precision() const { return precision_; }
  void set_precision(MatmulPrecision p) { precision_ = p; }

 private:
  WeightFormat format_ = WeightFormat::F32;
  MatmulPrecision precision_ = MatmulPrecision::Exact;
  int64_t rows_ = 0, cols_ = 0;
  const void* data_ = nullptr;
  size_t bytes_ = 0;
  std::shared_ptr<const void> owned_;

  template <typename Src>
  static void quantize_into(WeightMatrix& w, const Src* data, ThreadPool* pool,
                            const std::function<void(int64_t, int64_t)>& rows_read, HugePageArena* arena);
};

// Name of the SIMD target the q8/q4 matmul runs on here (e.g. "AVX3_DL" =
// AVX-512 with VNNI; it may differ from the other kernels' target, see
// simd_matmul_quant.cpp).
const char* matmul_simd_target();

// The kernel matmul() runs for `w` and m rows of x, and the multiply unit it
// keeps busy, so a benchmark can give each phase's figure as a fraction of
// that unit's peak (UnitPeaks, machine_limits.h).
enum class MatmulUnit { FmaF32, Int8Dot, Int16Madd, Bf16Dot, AmxInt8, AmxBf16 };
struct MatmulKernel {
  std::string name;  // e.g. "gemm f32 FMA (AVX3_ZEN4)", "int8 vpdpbusd (AVX3_DL)"
  MatmulUnit unit;
};
MatmulKernel matmul_kernel(const WeightMatrix& w, int64_t m);
const char* matmul_unit_name(MatmulUnit unit);

// Whether prefill and vision products run on the AMX tile unit here, per
// kernel (amx_matmul.h): "used", or why not ("no AMX-INT8 on this CPU", "tile
// state not granted by Linux", "the unit disagreed with its emulation", ...).
struct AmxStatus {
  const char* int8;  // q8/q4 weights
  const char* bf16;  // bf16 weights
};
AmxStatus matmul_amx_status();

// y [m, w.rows()] (row stride ldy) = x [m, w.cols()] (row stride ldx) · Wᵀ (+ bias [w.rows()]).
void matmul(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
            int64_t ldy, ThreadPool& pool, MatmulRows rows = MatmulRows::Decode);
inline void matmul(const float* x, int64_t m, const WeightMatrix& w, const float* bias, float* y, ThreadPool& pool,
                   MatmulRows rows = MatmulRows::Decode) {
  matmul(x, m, w.cols(), w, bias, y, w.rows(), pool, rows);
}

// One of several products of the same x (matmul_each).
struct MatmulOutput {
  const WeightMatrix* w;
  const float* bias;  // [w->rows()] or null
  float* y;           // [m, ldy]
  int64_t ldy;
};

// y = x · Wᵀ (+ bias) for every output, each bit for bit as matmul() gives it
// (with the same `rows`). For m <= 8 (decode) with one weight format and k, x is prepared once and the
// rows of all the products are shared among the threads together: decode's
// q, k and v projections (and gate and up) are one parallel step, not three.
// For q8/q4 the same holds for every m: a prefill's x is rounded once for all
// the products, whose work items the threads share.
void matmul_each(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool,
                 MatmulRows rows = MatmulRows::Decode);

// One product of matmul_many: out.y [m, out.ldy] = x [m, ldx] · out.wᵀ (+ out.bias).
struct MatmulTask {
  const float* x;
  int64_t m, ldx;
  MatmulOutput out;
};

// Every task bit for bit as matmul() gives it. When every task has 1 to 8
// rows (decode) and all share one weight format and k, the rows of all the
// products are shared among the threads in one parallel step, each distinct
// x prepared once (tasks in a row with the same x, m and ldx share it): a
// mixture of experts' decode streams every chosen expert's gate and up, then
// every down, with no wait for the threads between experts, where one step
// per expert left a product of a few hundred KB per thread between waits.
// Otherwise the tasks run one after the other (matmul_each).
void matmul_many(std::span<const MatmulTask> tasks, ThreadPool& pool);

}  // namespace qvl
